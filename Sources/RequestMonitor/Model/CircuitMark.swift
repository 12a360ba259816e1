import Foundation
import RequestOperations

/// A host's circuit breaker as the events last told it (`circuitOpened`, `circuitHalfOpen`,
/// `circuitClosed`: host-level events, with an empty `op`), for the Hosts view.
public struct CircuitMark: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        case closed
        /// Until the session time `until`; nil: isolated by hand.
        case open(until: TimeInterval?)
        case halfOpen
    }

    public var state: State
    /// Why it opened or closed last.
    public var reason: String
    /// When (session time) it last changed.
    public var since: TimeInterval

    /// The mark a host-level event sets, with its host; nil for any other event.
    static func from(_ event: RequestEvent) -> (host: String, mark: CircuitMark)? {
        switch event.payload {
        case .circuitOpened(let host, let reason, let until):
            (host, CircuitMark(state: .open(until: until), reason: reason, since: event.time))
        case .circuitHalfOpen(let host):
            (host, CircuitMark(state: .halfOpen, reason: "one probe may go through", since: event.time))
        case .circuitClosed(let host, let reason):
            (host, CircuitMark(state: .closed, reason: reason, since: event.time))
        // Every other kind, by name: a new host-level kind does not build until it is placed
        // here or above (the Hosts view would not show it otherwise).
        case .queued, .built, .started, .preparationFailed, .taskCreated, .injected, .breakpoint, .breakpointResolved, .breakpointSet,
             .breakpointRemoved, .sent, .connection, .redirect, .response, .data, .uploaded, .responseBody, .requestBody, .headerFields, .messages, .trailers, .taskCompleted,
             .validationFailed, .retryScheduled, .retryDenied, .hedged, .circuitWaiting, .rateLimitWaiting, .rateLimited, .retryBudget,
             .earlyRetry, .intercepted, .held, .released, .reactorStarted, .reactorWaiting, .reactorFinished, .requeued, .cancelled,
             .finished, .missed, .other:
            nil
        }
    }

    /// `open 3.2s`, `isolated`, `half-open`, `closed`, at session time `now`.
    public func label(now: TimeInterval) -> String {
        switch state {
        case .closed: "closed"
        case .halfOpen: "half-open"
        case .open(nil): "isolated"
        case .open(let until?): String(format: "open %.1fs", max(0, until - now))
        }
    }

    /// The breaker's key for a URL: the engine's own ``HostKey`` (`host:port`, the scheme's
    /// default port written), so the monitor names hosts exactly as the breaker does.
    static func breakerKey(url: String) -> String? {
        HostKey(url: URL(string: url))?.description
    }
}
