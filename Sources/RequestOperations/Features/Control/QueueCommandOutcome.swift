import Foundation

/// How a ``QueueCommand`` went: typed, so the live monitor and an attached one (which gets
/// it over the endpoint as it is, in its `Codable` form) tell the same things apart; put
/// into words by `QueueCommandOutcome.message` in RequestEventFormat.
public enum QueueCommandOutcome: Sendable, Equatable, Codable {
    /// The operation skipped its backoff.
    case retryingNow(operation: String)
    /// A finished operation runs again under a new id.
    case runningAgain(operation: String, as: String)
    /// A person's edit of an operation's request was sent under a new id.
    case sentEdited(operation: String, as: String)
    case notWaitingToRetry(operation: String)
    case cancelled(operation: String)
    case alreadyEnded(operation: String)
    case cancelledAll(count: Int)
    case paused
    case resumed
    /// The batches released and how many requests each let go; empty when none held any.
    case released(batches: [ReleasedBatch])
    /// No operation with this id in the queue (or among those it remembers).
    case unknownOperation(operation: String)
    /// The host's breaker was forced open.
    case isolated(host: String)
    /// The host's breaker was closed by hand.
    case circuitClosed(host: String)
    case circuitAlreadyClosed(host: String)
    /// The queue runs without circuit breakers.
    case noCircuitBreaker
    /// A fault is injected into every request to the host (`host:port`, what).
    case faultSet(host: String, effect: String)
    case faultRemoved(host: String)
    case faultsCleared(count: Int)
    /// This program takes no faults from an attached monitor.
    case faultsNotAccepted
    /// A breakpoint was set (its number and match).
    case breakpointSet(id: Int, match: String)
    /// A match that cannot be read (why).
    case badMatch(reason: String)
    case breakpointsCleared(count: Int)
    /// The operation stopped at a breakpoint goes on as the person chose (in words).
    case breakpointResolved(operation: String, how: String)
    /// The operation is not stopped at a breakpoint.
    case notStopped(operation: String)
    case breakpointEnabled(id: Int, enabled: Bool)
    case breakpointRemoved(id: Int)
    /// No breakpoint with this number.
    case unknownBreakpoint(id: Int)
    /// The program's endpoint takes no commands (`--read-only`).
    case readOnly
    /// The command never reached the queue: the line was refused (its reason), or no answer
    /// came from the program.
    case notCarriedOut(reason: String)

    /// False when nothing was done. Every case says which, with no `default:` (a refusal
    /// counted as done would undo nothing in the monitor: a pause that did not happen).
    public var ok: Bool {
        switch self {
        case .notWaitingToRetry, .alreadyEnded, .unknownOperation, .circuitAlreadyClosed, .noCircuitBreaker, .faultsNotAccepted,
             .readOnly, .notCarriedOut, .badMatch, .notStopped, .unknownBreakpoint: false
        case .retryingNow, .runningAgain, .sentEdited, .cancelled, .cancelledAll, .paused, .resumed, .released, .isolated, .circuitClosed,
             .faultSet, .faultRemoved, .faultsCleared, .breakpointSet, .breakpointsCleared, .breakpointResolved, .breakpointEnabled,
             .breakpointRemoved: true
        }
    }
}

/// One batch released by hand.
public struct ReleasedBatch: Sendable, Equatable, Codable {
    public var name: String
    public var count: Int

    public init(name: String, count: Int) {
        self.name = name
        self.count = count
    }
}
