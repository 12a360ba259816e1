import Dispatch
import Synchronization

/// Limits how many requests are in flight at once (in all, and per host), serves waiters
/// by priority, and can pause starting new ones.
///
/// An operation takes a slot for each attempt and gives it back when the attempt ends, so
/// an operation waiting out a backoff holds no slot: with a limit of 2 and two operations
/// in backoff, a third one runs. (An `OperationQueue`'s own limit cannot do that: an
/// executing operation holds its slot until it finishes.)
///
/// Waiters are served by priority (higher first), then first in, first out. A waiter whose
/// host is at its per-host limit is passed over, so one slow host does not stall the others.
///
/// A waiter granted a slot that another operation freed is told on the gate's hand-off
/// queue, not on the releasing thread: slots are mostly freed on URLSession's serial
/// delegate queue, and starting the next request there would hold up every callback of
/// every other task (measured: a 15–25 % loss of throughput).
public final class ConcurrencyGate: Sendable {
    public typealias Grant = @Sendable () -> Void

    private struct Waiter {
        let id: UInt64
        let priority: Int
        let host: String?
        let grant: Grant
    }

    private struct State {
        var limit: Int
        var perHostLimit: Int?
        var inUse = 0
        var inUseByHost: [String: Int] = [:]
        var paused = false
        var nextID: UInt64 = 0
        /// Sorted by priority (highest first), then by id; served from `head`.
        var waiters: [Waiter] = []
        var head = 0

        var waitingCount: Int { waiters.count - head }

        func hostHasRoom(_ host: String?) -> Bool {
            guard let host, let perHostLimit else { return true }
            return inUseByHost[host, default: 0] < perHostLimit
        }

        mutating func take(_ host: String?) {
            inUse += 1
            if let host, perHostLimit != nil { inUseByHost[host, default: 0] += 1 }
        }

        mutating func giveBack(_ host: String?) {
            inUse = max(0, inUse - 1)
            if let host, let count = inUseByHost[host] {
                inUseByHost[host] = count > 1 ? count - 1 : nil
            }
        }

        mutating func insert(_ waiter: Waiter) {
            // Most waiters share one priority: appending keeps the order without a search.
            if waiters.count == head || waiters[waiters.count - 1].priority >= waiter.priority {
                waiters.append(waiter)
                return
            }
            var low = head, high = waiters.count
            while low < high {
                let mid = (low + high) / 2
                if waiters[mid].priority >= waiter.priority { low = mid + 1 } else { high = mid }
            }
            waiters.insert(waiter, at: low)
        }

        mutating func popReady() -> [Grant] {
            var grants: [Grant] = []
            var index = head
            while !paused, inUse < limit, index < waiters.count {
                let waiter = waiters[index]
                guard hostHasRoom(waiter.host) else {
                    index += 1
                    continue
                }
                take(waiter.host)
                grants.append(waiter.grant)
                if index == head {
                    head += 1
                    index += 1
                } else {
                    waiters.remove(at: index)
                }
            }
            if head > 64, head * 2 > waiters.count {
                waiters.removeFirst(head)
                head = 0
            }
            return grants
        }
    }

    private let state: Mutex<State>
    private let handoff: DispatchQueue?
    /// Requests in flight at once to one host; `nil`: no such limit.
    public let perHostLimit: Int?

    /// - Parameters:
    ///   - limit: requests in flight at once (at least 1); `Int.max` for no limit.
    ///   - perHostLimit: requests in flight at once to one host; `nil` for no limit.
    ///   - handoff: where deferred grants run; `nil` runs them on the thread that frees the
    ///     slot (for tests that want every grant to happen before `release()` returns).
    public init(limit: Int, perHostLimit: Int? = nil, handoff: DispatchQueue? = DispatchQueue.global(qos: .userInitiated)) {
        self.perHostLimit = perHostLimit.map { max(1, $0) }
        state = Mutex(State(limit: max(1, limit), perHostLimit: self.perHostLimit))
        self.handoff = handoff
    }

    private func run(_ grants: [Grant]) {
        guard let handoff else {
            grants.forEach { $0() }
            return
        }
        for grant in grants {
            handoff.async(execute: grant)
        }
    }

    /// A ticket for a waiter, to withdraw it with ``withdraw(_:)``.
    public struct Ticket: Sendable, Hashable {
        fileprivate let id: UInt64
    }

    /// Asks for a slot. `grant` runs once a slot is the caller's: at once, on this thread,
    /// when one is free; else later, on the hand-off queue. Call without holding locks.
    ///
    /// - Parameters:
    ///   - host: the request's host (`host:port`), for the per-host limit; give the same
    ///     one to ``release(host:)``.
    ///   - priority: higher is served first (`Operation.QueuePriority`'s raw values fit).
    @discardableResult
    public func acquire(host: String? = nil, priority: Int = 0, _ grant: @escaping Grant) -> Ticket {
        let (ticket, now) = state.withLock { state -> (Ticket, Bool) in
            state.nextID += 1
            let id = state.nextID
            // Every time room opens the waiters that fit are served at once, so with room
            // now, no waiter that could take it is left: none is passed over here.
            if !state.paused, state.inUse < state.limit, state.hostHasRoom(host) {
                state.take(host)
                return (Ticket(id: id), true)
            }
            state.insert(Waiter(id: id, priority: priority, host: host, grant: grant))
            return (Ticket(id: id), false)
        }
        if now { grant() }
        return ticket
    }

    /// Withdraws a waiter that has not been granted yet. Returns false when it was already
    /// granted (the caller then holds a slot and must release it).
    public func withdraw(_ ticket: Ticket) -> Bool {
        state.withLock { state in
            guard let index = state.waiters[state.head...].firstIndex(where: { $0.id == ticket.id }) else { return false }
            state.waiters.remove(at: index)
            return true
        }
    }

    /// Gives a slot back and hands it to the next waiter, if any.
    ///
    /// When no other slot is taken, nothing else can be waiting on the releasing thread
    /// (URLSession's delegate queue has no other task to serve), so the next waiter starts
    /// at once on this thread instead of paying a thread hop.
    public func release(host: String? = nil) {
        let (grants, idle) = state.withLock { state -> ([Grant], Bool) in
            state.giveBack(host)
            let idle = state.inUse == 0
            return (state.popReady(), idle)
        }
        if idle, grants.count == 1 {
            grants[0]()
        } else {
            run(grants)
        }
    }

    /// While paused, slots are not handed out; attempts already running go on.
    public var isPaused: Bool {
        get { state.withLock { $0.paused } }
        set {
            let grants = state.withLock { state -> [Grant] in
                state.paused = newValue
                return state.popReady()
            }
            run(grants)
        }
    }

    public var limit: Int {
        get { state.withLock { $0.limit } }
        set {
            let grants = state.withLock { state -> [Grant] in
                state.limit = max(1, newValue)
                return state.popReady()
            }
            run(grants)
        }
    }

    /// Slots taken now.
    public var inUse: Int { state.withLock { $0.inUse } }

    /// Waiters not yet granted.
    public var waiting: Int { state.withLock { $0.waitingCount } }
}
