import Dispatch
import Foundation
import Synchronization

/// Monotonic time and timers for the engine.
///
/// Backoff, countdowns, deadlines and probes read time only through this protocol, so a
/// test can inject ``ManualClock`` and make every delay exact and instant. The default,
/// ``SystemClock``, is the machine's monotonic clock.
public protocol RequestClock: Sendable {
    /// Seconds since a fixed, arbitrary origin. Never goes backwards. Read by an operation
    /// while it holds its lock: it must not call back into the queue.
    func now() -> TimeInterval

    /// Runs `work` once, at or after `deadline` (a value of ``now()``), on a background queue.
    /// After ``ScheduledTimer/cancel()`` returns, `work` has either already started or will
    /// never run.
    func schedule(at deadline: TimeInterval, _ work: @escaping @Sendable () -> Void) -> ScheduledTimer
}

/// A pending piece of work scheduled on a ``RequestClock``.
///
/// A class: a timer is a handle with an identity, and an operation passes its timers through
/// each change of its state. As a class-bound existential one is a pointer (a retain to
/// copy); as any `Sendable` value it was a 40-byte box copied through its type's witnesses,
/// ten times a request (#58).
public protocol ScheduledTimer: AnyObject, Sendable {
    func cancel()
}

/// The machine's monotonic clock (`CLOCK_MONOTONIC` through Dispatch) with its timers on
/// one Dispatch timer source per clock (`TimerQueue`).
public struct SystemClock: RequestClock {
    private let timers: TimerQueue

    public init(queue: DispatchQueue = DispatchQueue(label: "reqtop.clock", qos: .userInitiated)) {
        timers = TimerQueue(queue: queue, now: { SystemClock.uptime() })
    }

    public func now() -> TimeInterval {
        Self.uptime()
    }

    private static func uptime() -> TimeInterval {
        #if os(Linux)
        // The clock Dispatch reads for `DispatchTime.now()` on Linux, read directly: an
        // operation reads it some 27 times a request (every event's `t`), and Dispatch's
        // conversions around it were half the cost of each read (#58).
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return TimeInterval(now.tv_sec) + TimeInterval(now.tv_nsec) / 1_000_000_000
        #else
        TimeInterval(DispatchTime.now().uptimeNanoseconds) / 1_000_000_000
        #endif
    }

    public func schedule(at deadline: TimeInterval, _ work: @escaping @Sendable () -> Void) -> ScheduledTimer {
        timers.schedule(at: deadline, work)
    }
}

/// Runs its work at most once, and never after `cancel()` has won the race.
final class OneShotTimer: ScheduledTimer {
    private let work: Mutex<(@Sendable () -> Void)?>
    /// The queue told of a cancel, so it can sweep (held weakly, and not in a closure: one
    /// allocation less for each of the timers every operation schedules).
    private weak let queue: TimerQueue?

    init(_ work: @escaping @Sendable () -> Void, queue: TimerQueue? = nil) {
        self.work = Mutex(work)
        self.queue = queue
    }

    /// Fired or cancelled.
    var isSpent: Bool { work.withLock { $0 == nil } }

    func fire() {
        let body = work.withLock { slot -> (@Sendable () -> Void)? in
            let body = slot
            slot = nil
            return body
        }
        body?()
    }

    func cancel() {
        let wasPending = work.withLock { slot -> Bool in
            defer { slot = nil }
            return slot != nil
        }
        if wasPending { queue?.noteCancelled() }
    }
}

/// A clock that moves only when told to, for exact, instant tests of time-based logic.
///
/// ``advance(by:)`` fires every timer that falls due, in deadline order, on the calling
/// thread. Work that a fired timer schedules is fired too if it falls within the same advance.
public final class ManualClock: RequestClock {
    private struct Pending {
        let deadline: TimeInterval
        let sequence: Int
        let timer: OneShotTimer
    }

    private struct State {
        var now: TimeInterval
        var sequence = 0
        var pending: [Pending] = []
    }

    private let state: Mutex<State>

    public init(now: TimeInterval = 1_000) {
        state = Mutex(State(now: now))
    }

    public func now() -> TimeInterval {
        state.withLock { $0.now }
    }

    /// Timers scheduled and neither fired nor cancelled-and-collected yet.
    public var pendingTimerCount: Int {
        state.withLock { $0.pending.count }
    }

    /// The earliest deadline of a pending timer, if any.
    public var nextDeadline: TimeInterval? {
        state.withLock { $0.pending.map(\.deadline).min() }
    }

    public func schedule(at deadline: TimeInterval, _ work: @escaping @Sendable () -> Void) -> ScheduledTimer {
        let timer = OneShotTimer(work)
        state.withLock { state in
            state.sequence += 1
            state.pending.append(Pending(deadline: deadline, sequence: state.sequence, timer: timer))
        }
        return timer
    }

    /// Moves time forward by `seconds`, firing what falls due along the way.
    public func advance(by seconds: TimeInterval) {
        let target = state.withLock { $0.now + seconds }
        while true {
            let next = state.withLock { state -> OneShotTimer? in
                guard let index = state.pending.indices
                    .filter({ state.pending[$0].deadline <= target })
                    .min(by: { (state.pending[$0].deadline, state.pending[$0].sequence) < (state.pending[$1].deadline, state.pending[$1].sequence) })
                else { return nil }
                let due = state.pending.remove(at: index)
                state.now = max(state.now, due.deadline)
                return due.timer
            }
            guard let next else { break }
            next.fire()
        }
        state.withLock { $0.now = max($0.now, target) }
    }
}
