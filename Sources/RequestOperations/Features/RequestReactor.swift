import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// Acts on a result once for many operations: the classic case is a token refresh after a
/// 401, run once for every request that got one while it runs.
///
/// After each attempt an operation asks its reactors (``RequestOptions/reactors``) in
/// order. The first that does not ignore the result decides:
/// - ``ReactorDecision/react(trigger:)``: the operation joins the reactor's current run,
///   or starts one (`reactorStarted` on that operation; `reactorWaiting` on each that joins).
///   When the run succeeds the operation is requeued (`requeued`; a new attempt at once,
///   not counted against its retry policy) or, without ``Options/requeue``, goes on as if
///   nothing had happened. When it fails or times out, every waiting operation fails with
///   ``RequestError/Reason/reactor(name:message:)``; nothing is retried.
/// - ``ReactorDecision/requeue(reason:)``: a new attempt at once, without a run (a 401 for
///   a request sent with a token that has already been replaced).
///
/// A reactor that ran ``Options/maxRuns`` times within ``Options/window`` refuses to run
/// again and fails the operation with an "excessive" error instead of looping.
///
/// Default: no reactors.
public final class RequestReactor: Sendable {
    public struct Options: Sendable {
        /// Send the triggering operations again after a successful run. Default true.
        public var requeue: Bool
        /// New requests (of operations with this reactor) wait while it runs. Default true.
        public var holdNewRequests: Bool
        /// Run the interceptors again on requeue (so a new token is applied). Default true.
        public var reinterceptOnRequeue: Bool
        /// The most a run may take; then it fails with "timed out". Default 30 s.
        public var timeLimit: TimeInterval?
        /// Runs allowed within ``window``. Default 3 in 60 s.
        public var maxRuns: Int
        public var window: TimeInterval

        public init(requeue: Bool = true, holdNewRequests: Bool = true, reinterceptOnRequeue: Bool = true,
                    timeLimit: TimeInterval? = 30, maxRuns: Int = 3, window: TimeInterval = 60) {
            self.requeue = requeue
            self.holdNewRequests = holdNewRequests
            self.reinterceptOnRequeue = reinterceptOnRequeue
            self.timeLimit = timeLimit
            self.maxRuns = max(1, maxRuns)
            self.window = window
        }
    }

    /// Names the reactor in events and errors.
    public let name: String
    public let options: Options
    private let handler: any ReactorHandler
    private let clock: RequestClock
    private let state = Mutex(State())

    public init(name: String, options: Options = Options(), clock: RequestClock = SystemClock(), handler: any ReactorHandler) {
        self.name = name
        self.options = options
        self.clock = clock
        self.handler = handler
    }

    /// A reactor from two closures.
    public convenience init(name: String, options: Options = Options(), clock: RequestClock = SystemClock(),
                            decide: @escaping @Sendable (ReactorInput) -> ReactorDecision,
                            run: @escaping @Sendable (String) async throws -> Void) {
        self.init(name: name, options: options, clock: clock, handler: ClosureReactorHandler(decideBody: decide, runBody: run))
    }

    /// Runs started so far.
    public var runCount: Int { state.withLock { $0.runs } }

    public var isRunning: Bool { state.withLock { $0.current != nil } }

    // MARK: - Used by operations

    func decide(_ input: ReactorInput) -> ReactorDecision {
        handler.decide(input)
    }

    /// How an operation came into a run.
    enum Entry {
        case started(run: UInt64)
        case joined(run: UInt64)
        /// Ran too often: the error to fail with.
        case refused(RequestError.Reason)
    }

    /// Joins the current run, or starts one for `trigger`.
    func enter(trigger: String) -> Entry {
        let (entry, start) = state.withLock { state -> (Entry, UInt64?) in
            if let current = state.current { return (.joined(run: current), nil) }
            let now = clock.now()
            state.starts.removeAll { $0 <= now - options.window }
            if state.starts.count >= options.maxRuns {
                let message = "excessive refresh: ran \(state.starts.count) times within \(DurationText.format(options.window)); not running again"
                return (.refused(.reactor(name: name, message: message)), nil)
            }
            state.starts.append(now)
            state.runs += 1
            state.nextRun += 1
            state.current = state.nextRun
            return (.started(run: state.nextRun), state.nextRun)
        }
        if let run = start { begin(run, trigger: trigger) }
        return entry
    }

    /// The run now going on, if any: operations that hold new requests wait for it.
    var currentRun: UInt64? { state.withLock { $0.current } }

    /// Waits for `run` to end; `nil` when it succeeded, else the error to fail with.
    /// A cancelled waiting task stops waiting at once (and gets a cancellation error).
    func outcome(of run: UInt64) async -> RequestError.Reason? {
        let id = state.withLock { $0.waiters.makeID() }
        return await WaiterList<RequestError.Reason?, UInt64>.wait(cancelled: .cancelled(by: "caller"), enqueue: { continuation in
            let done = state.withLock { state -> RequestError.Reason?? in
                guard state.waiters.add(id, tag: run, continuation) else { return .some(.cancelled(by: "caller")) }
                // The run may have ended already: then its outcome, at once.
                guard let outcome = state.outcomes[run] else { return .none }
                _ = state.waiters.withdraw(id)
                return .some(outcome)
            }
            if case .some(let outcome) = done { continuation.resume(returning: outcome) }
        }, withdraw: { [self] in state.withLock { $0.waiters.withdraw(id) } })
    }

    // MARK: - Running

    private func begin(_ run: UInt64, trigger: String) {
        let task = Task { [handler, name] in
            do {
                try await handler.run(trigger: trigger)
                self.end(run, nil)
            } catch is CancellationError {
                self.end(run, .reactor(name: name, message: "cancelled"))
            } catch let error as RequestError.Reason {
                self.end(run, .reactor(name: name, message: "\(error)"))
            } catch {
                self.end(run, .reactor(name: name, message: "\(error)"))
            }
        }
        var timer: ScheduledTimer?
        if let limit = options.timeLimit {
            timer = clock.schedule(at: clock.now() + limit) { [weak self, name] in
                self?.end(run, .reactor(name: name, message: "timed out after \(DurationText.format(limit))"))
            }
        }
        let stale = state.withLock { state -> Bool in
            guard state.current == run else { return true }
            state.task = task
            state.timer = timer
            return false
        }
        if stale { timer?.cancel() }
    }

    private func end(_ run: UInt64, _ error: RequestError.Reason?) {
        let ended = state.withLock { state -> (waiters: [CheckedContinuation<RequestError.Reason?, Never>], task: Task<Void, Never>?, timer: ScheduledTimer?)? in
            guard state.current == run else { return nil }
            state.current = nil
            state.outcomes[run] = .some(error)
            if run > 16 { state.outcomes[run - 16] = nil }
            let waiting = state.waiters.removeAll { $0 == run }
            let (task, timer) = (state.task, state.timer)
            state.task = nil
            state.timer = nil
            return (waiting, task, timer)
        }
        guard let ended else { return }
        ended.timer?.cancel()
        if error != nil { ended.task?.cancel() }
        for waiter in ended.waiters {
            waiter.resume(returning: error)
        }
    }

    private struct State {
        var current: UInt64?
        var nextRun: UInt64 = 0
        var runs = 0
        /// Start times of recent runs, for the excessive-run limit.
        var starts: [TimeInterval] = []
        var task: Task<Void, Never>?
        var timer: ScheduledTimer?
        /// Outcomes of the last runs, for a waiter that arrives after its run ended.
        var outcomes: [UInt64: RequestError.Reason?] = [:]
        /// Operations waiting for a run, tagged with the run.
        var waiters = WaiterList<RequestError.Reason?, UInt64>()
    }
}

/// What a reactor does: decides from a result, and runs.
public protocol ReactorHandler: Sendable {
    /// Whether this result calls for the reactor. Runs on URLSession's delegate queue: keep it quick.
    func decide(_ input: ReactorInput) -> ReactorDecision
    /// The work, run once for every operation that triggers it while it runs. Throwing
    /// fails every waiting operation with the error.
    func run(trigger: String) async throws
}

struct ClosureReactorHandler: ReactorHandler {
    let decideBody: @Sendable (ReactorInput) -> ReactorDecision
    let runBody: @Sendable (String) async throws -> Void

    func decide(_ input: ReactorInput) -> ReactorDecision { decideBody(input) }
    func run(trigger: String) async throws { try await runBody(trigger) }
}

/// One attempt's result, as a reactor sees it.
public struct ReactorInput: Sendable {
    public var operationID: String
    /// The request as it was sent (after interceptors and preparation).
    public var request: URLRequest
    /// `nil` without a response.
    public var status: Int?
    public var headers: [String: String]
    /// `nil` when the attempt succeeded.
    public var failure: AttemptFailure?
    /// The number of the attempt, from 1 (added).
    public var attempt: Int = 1
}

/// A reactor's answer to one result.
public enum ReactorDecision: Sendable, Equatable {
    /// Not for this reactor.
    case ignore
    /// Join (or start) a run; `trigger` says why, in events.
    case react(trigger: String)
    /// Send again at once, without a run.
    case requeue(reason: String)
}
