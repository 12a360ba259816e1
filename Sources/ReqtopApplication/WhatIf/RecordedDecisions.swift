import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations
import Synchronization

/// The decisions the recorded program's code made, read from its events, so that a what-if
/// re-run makes each again at the same point: a reactor's run (a token refresh) and the
/// re-sends after it, the delay each retry waited (a jittered backoff is a random choice),
/// and which operations waited for which. A re-run without them is not the incident: a feed
/// that got a 401 would fail where the program refreshed its token and sent it again.
///
/// The re-run's reactors carry the recorded name with ` (as recorded)` after it, so its
/// events say that a recorded decision was replayed, not made.
package struct RecordedDecisions {
    /// One reactor run of the recording: how long it took, how it ended.
    package struct Run: Equatable {
        package var duration: TimeInterval
        package var outcome: ReactorOutcome
    }

    /// The delay each retry waited and the words it was said with: operation → the attempt
    /// that failed → the retry.
    package private(set) var backoff: [String: [Int: RecordedBackoff.Retry]] = [:]
    /// The retries the host's retry budget refused: operation → the attempt that failed →
    /// the refusal's words.
    package private(set) var denials: [String: [Int: String]] = [:]
    /// Where an attempt was held before it was sent (in a batch, or for a reactor's run a new
    /// request waits for): operation → attempt → who held it and until when (seconds from
    /// the recorded run's 0).
    package private(set) var holds: [String: [Int: RecordedHold.Hold]] = [:]
    /// Per reactor name: its runs in order.
    package private(set) var runs: [String: [Run]] = [:]
    /// Per reactor name: operation → attempt → what it decided after that attempt.
    package private(set) var decisions: [String: [String: [Int: ReactorDecision]]] = [:]
    /// Per reactor name: every operation with an event of it (they had it in their options).
    package private(set) var members: [String: Set<String>] = [:]
    /// Operation → the operations it ran after.
    package private(set) var parents: [String: [String]] = [:]
    /// The early retries that shortened a wait (another request's success on the host, a
    /// probe, a person's key): operation → the attempt it brought forward → how long after
    /// the retry was scheduled it came, what triggered it, and the delay it set.
    package private(set) var earlyRetries: [String: [Int: EarlyRetry]] = [:]

    package struct EarlyRetry: Equatable {
        package var after: TimeInterval
        package var trigger: String
        package var delay: TimeInterval
    }

    package static let suffix = " (as recorded)"

    /// `origin`: the recorded run's 0 (its first request's `queued`).
    package init(events: [RequestEvent], origin: TimeInterval = 0) {
        var holding: [String: (by: String, at: TimeInterval)] = [:]
        var scheduledAt: [String: TimeInterval] = [:]
        var completed: Set<String> = []
        var started: [String: (op: String, at: TimeInterval, trigger: String)] = [:]
        var current: [String: String] = [:]
        for event in events where !event.operationID.isEmpty {
            let id = event.operationID, key = "\(id)#\(event.attempt)"
            switch event.payload {
            case .queued(_, _, _, _, _, let options?) where !options.parents.isEmpty:
                parents[id] = options.parents
            case .taskCompleted, .validationFailed:
                completed.insert(key)
            case .retryScheduled(let delay, let reason):
                scheduledAt[key] = event.time
                backoff[id, default: [:]][event.attempt] = RecordedBackoff.Retry(delay: delay, reason: reason)
            case .earlyRetry(let trigger, let delay):
                // On the attempt it brings forward; its wait began at the last one's `retryScheduled`.
                if let scheduled = scheduledAt["\(id)#\(event.attempt - 1)"], earlyRetries[id]?[event.attempt] == nil {
                    earlyRetries[id, default: [:]][event.attempt] = EarlyRetry(after: max(0, event.time - scheduled), trigger: trigger, delay: delay)
                }
            case .retryDenied(let reason):
                denials[id, default: [:]][event.attempt] = reason
            case .held(let batch):
                holding[key] = ("batch:\(batch)", event.time)
            case .released:
                if let hold = holding.removeValue(forKey: key) {
                    holds[id, default: [:]][event.attempt] = RecordedHold.Hold(by: hold.by, until: event.time - origin)
                }
            case .reactorStarted(let name, let trigger):
                members[name, default: []].insert(id)
                started[name] = (id, event.time, trigger)
                current[name] = trigger
                decisions[name, default: [:]][id, default: [:]][event.attempt] = .react(trigger: trigger)
            case .reactorWaiting(let name):
                members[name, default: []].insert(id)
                // After its own attempt it joined a run; before one, it was a new request held.
                if completed.contains(key) {
                    decisions[name, default: [:]][id, default: [:]][event.attempt] = .react(trigger: current[name] ?? "recorded")
                } else {
                    holding[key] = (name, event.time)
                }
            case .reactorFinished(let name, let outcome):
                members[name, default: []].insert(id)
                if let hold = holding[key], hold.by == name {
                    holding[key] = nil
                    holds[id, default: [:]][event.attempt] = RecordedHold.Hold(by: name, until: event.time - origin)
                }
                if let run = started[name], run.op == id {
                    runs[name, default: []].append(Run(duration: max(0, event.time - run.at), outcome: outcome))
                    started[name] = nil
                }
            case .requeued(let name, let reason):
                members[name, default: []].insert(id)
                // Sent again without a run of its own or one it joined: a plain requeue.
                if decisions[name]?[id]?[event.attempt] == nil { decisions[name, default: [:]][id, default: [:]][event.attempt] = .requeue(reason: reason) }
            case .finished(.cancelled, _, _, _, let reason?) where parents[id] == nil:
                // Recorded before `parents` was: the parent that was not there is named.
                if let parent = Self.parent(inReason: reason) { parents[id] = [parent] }
            case .queued, .finished, .cancelled, .built, .started, .sent, .connection, .preparationFailed, .taskCreated, .redirect, .response, .data, .uploaded,
                 .responseBody, .requestBody, .headerFields, .messages, .trailers, .hedged, .injected, .breakpoint, .breakpointResolved, .breakpointSet, .breakpointRemoved,
                 .circuitWaiting, .circuitOpened, .circuitHalfOpen, .circuitClosed, .rateLimitWaiting, .rateLimited,
                 .retryBudget, .intercepted, .missed, .other:
                break
            }
        }
    }

    /// The parent a dependency's cancel names: `parent ID failed` (or `was cancelled`, `did not run`).
    package static func parent(inReason reason: String) -> String? {
        guard reason.hasPrefix("parent ") else { return nil }
        for ending in [" failed", " was cancelled", " did not run"] where reason.hasSuffix(ending) {
            let id = reason.dropFirst("parent ".count).dropLast(ending.count)
            return id.isEmpty ? nil : String(id)
        }
        return nil
    }

    /// How many decisions there are to replay, for the line that says so.
    package var count: (reactorRuns: Int, requeues: Int, backoffs: Int, holds: Int, earlyRetries: Int, denials: Int) {
        (runs.values.reduce(0) { $0 + $1.count },
         decisions.values.reduce(0) { $0 + $1.values.reduce(0) { $0 + $1.count } },
         backoff.values.reduce(0) { $0 + $1.count },
         holds.values.reduce(0) { $0 + $1.count },
         earlyRetries.values.reduce(0) { $0 + $1.count },
         denials.values.reduce(0) { $0 + $1.count })
    }

    /// One reactor per recorded name, shared by every operation that had it.
    package func reactors(clock: RequestClock = SystemClock()) -> [String: RequestReactor] {
        var made: [String: RequestReactor] = [:]
        for name in Set(members.keys).union(decisions.keys) {
            let handler = RecordedReactorHandler(runs: runs[name] ?? [], decisions: decisions[name] ?? [:])
            // No limit of its own: the recording's runs happened, and are made again.
            let options = RequestReactor.Options(timeLimit: nil, maxRuns: max(3, (runs[name]?.count ?? 0) + 1))
            made[name] = RequestReactor(name: name + Self.suffix, options: options, clock: clock, handler: handler)
        }
        return made
    }

    /// The reactors `id` had, of those `reactors` made.
    package func reactors(of id: String, in reactors: [String: RequestReactor]) -> [RequestReactor] {
        members.filter { $0.value.contains(id) }.keys.sorted().compactMap { reactors[$0] }
    }
}

/// A recorded reactor: after each attempt, the decision the recording shows for it (none:
/// not for this reactor); each run takes as long as the recorded one did and ends as it did.
package final class RecordedReactorHandler: ReactorHandler {
    private let runs: [RecordedDecisions.Run]
    private let decisions: [String: [Int: ReactorDecision]]
    private let next = Mutex(0)

    package init(runs: [RecordedDecisions.Run], decisions: [String: [Int: ReactorDecision]]) {
        (self.runs, self.decisions) = (runs, decisions)
    }

    package func decide(_ input: ReactorInput) -> ReactorDecision {
        decisions[input.operationID]?[input.attempt] ?? .ignore
    }

    package struct RecordedFailure: Error, CustomStringConvertible {
        package var description: String
    }

    package func run(trigger: String) async throws {
        let index = next.withLock { index in
            defer { index += 1 }
            return index
        }
        // A run past the recorded ones (a re-run with other settings met more 401s) takes as
        // long as the last one did.
        guard let run = runs.indices.contains(index) ? runs[index] : runs.last else { return }
        try await Task.sleep(nanoseconds: UInt64(run.duration * 1_000_000_000))
        if case .failure(let message) = run.outcome { throw RecordedFailure(description: message) }
    }
}

/// The retry policy a re-run gives an operation: the recorded one decides whether to retry
/// (so `--set` of a breaker still changes what happens), a retry the recording made waits as
/// long as it did then (its jitter was a random choice), and a retry the host's budget
/// refused then is refused again, in its words (`denials`; empty when the budget is `--set`):
/// which member of a burst met the budget first was a race between simultaneous failures.
package struct RecordedBackoff: RetryPolicy {
    package struct Retry: Equatable {
        package var delay: TimeInterval
        package var reason: String
    }

    package let policy: RetryPolicy
    /// The failed attempt → the retry after it.
    package let retries: [Int: Retry]
    /// The failed attempt → why the budget refused the retry after it.
    package var denials: [Int: String] = [:]

    package func decide(_ context: RetryContext) -> RetryDecision {
        let decision = policy.decide(context)
        if case .retry = decision, let refusal = denials[context.attempt] {
            return .stop(reason: "\(context.failure.summary); \(refusal)\(RecordedDecisions.suffix)")
        }
        guard case .retry(_, _, let fromServer) = decision, let retry = retries[context.attempt] else { return decision }
        return .retry(after: retry.delay, reason: retry.reason, fromServer: fromServer)
    }

    package var attemptLimit: Int? { policy.attemptLimit }
    package var settings: RequestOperations.RetrySettings? { policy.settings }
}

/// Holds an attempt where the recording shows it held (in a batch until it was released, or
/// a new request waiting for a reactor's run), until the moment it was let go, and names
/// itself after the recorded holder with ` (as recorded)`.
package struct RecordedHold: RequestInterceptor {
    package struct Hold: Equatable {
        /// `batch:NAME`, or the reactor's name.
        package var by: String
        /// Seconds from the run's 0.
        package var until: TimeInterval
    }

    package let name: String
    /// Attempt → until when (seconds from the run's 0).
    package let until: [Int: TimeInterval]
    /// The re-run's 0.
    package let begun: RunStart

    package func intercept(_ request: URLRequest, context: InterceptionContext) async throws -> Interception {
        if let until = until[context.attempt] {
            let wait = until - begun.elapsed
            if wait > 0 { try await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000)) }
        }
        return Interception(request)
    }
}

/// The moment a re-run began, set once it begins: what its recorded moments count from.
package final class RunStart: Sendable {
    private let date = Mutex(Date())

    package func mark() { date.withLock { $0 = Date() } }

    /// Seconds since the run began.
    package var elapsed: TimeInterval { Date().timeIntervalSince(date.withLock { $0 }) }
}
