import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a person can tell a running queue: the one vocabulary from a monitor's key to the
/// queue and back. The live monitor hands it to ``QueueControl/perform(_:missing:)``; an
/// attached monitor sends it over the endpoint as it is (RequestEndpoint's wire form) and
/// the program performs it the same way; the answer is a ``QueueCommandOutcome`` both ways,
/// put into words only where a person reads it.
///
/// A new command is one case here, its handler in ``QueueControl``, its outcomes in
/// ``QueueCommandOutcome`` (and their words), and its wire name in RequestEndpoint.
public enum QueueCommand: Sendable, Equatable {
    /// Skip a backoff, or run a finished operation again.
    case retry(operation: String)
    case cancel(operation: String)
    /// Cancel every operation still running.
    case cancelAll
    /// Pause (no new attempt starts) or resume.
    case setSuspended(Bool)
    /// Release every batch that holds requests now.
    case releaseBatches
    /// Force a host's circuit breaker open (`host:port`), or close it.
    case isolate(host: String)
    case closeCircuit(host: String)
    /// Send a person's edit of an operation's request as a new operation (`ID~edit1`).
    case resend(operation: String, edited: EditedRequest)
    /// Inject a 503 into every request to a host (`host:port`), or take away the one this
    /// person set there.
    case toggleFault(host: String)
    /// Remove every injected fault.
    case clearFaults
    /// Stop the requests this match picks (the filter language) before they are sent.
    case addBreakpoint(match: String)
    /// Remove the breakpoints this person set; the operations stopped at them go on.
    case clearBreakpoints
    /// Turn breakpoint N off (what it stopped goes on) or on again.
    case setBreakpointEnabled(id: Int, enabled: Bool)
    /// Remove breakpoint N; what it stopped goes on.
    case removeBreakpoint(id: Int)
    /// Resolve an operation stopped at a breakpoint.
    case resolveBreakpoint(operation: String, resolution: BreakpointResolution)

    /// The operation the command is about, if one.
    public var operation: String? {
        switch self {
        case .retry(let id), .cancel(let id), .resend(let id, _), .resolveBreakpoint(let id, _): id
        case .cancelAll, .setSuspended, .releaseBatches, .isolate, .closeCircuit, .toggleFault, .clearFaults,
             .addBreakpoint, .clearBreakpoints, .setBreakpointEnabled, .removeBreakpoint: nil
        }
    }

    /// Whether the command injects or removes faults, or stops requests at breakpoints (which
    /// an attached monitor may only do where the program opted in). A security predicate:
    /// every case says yes or no here, with no `default:`, so a new command cannot slip past
    /// the endpoint's `acceptsFaults` check by being forgotten (the compiler names it).
    public var touchesFaults: Bool {
        switch self {
        case .toggleFault, .clearFaults, .addBreakpoint, .clearBreakpoints, .resolveBreakpoint, .setBreakpointEnabled, .removeBreakpoint: true
        case .retry, .cancel, .cancelAll, .setSuspended, .releaseBatches, .isolate, .closeCircuit, .resend: false
        }
    }
}

/// A request as a person edited it, to be sent as a new operation.
public struct EditedRequest: Sendable, Equatable {
    public var request: URLRequest
    /// The attempt's timeout and the operation's deadline, seconds; nil keeps the queue's.
    public var attemptTimeout: TimeInterval?
    public var deadline: TimeInterval?

    public init(request: URLRequest, attemptTimeout: TimeInterval? = nil, deadline: TimeInterval? = nil) {
        self.request = request
        self.attemptTimeout = attemptTimeout
        self.deadline = deadline
    }
}
