/// Every kind of event, by its `event` name: the one list of the names, so code that asks
/// for a kind names a case the compiler checks, not a string.
public enum EventKind: String, Sendable, CaseIterable {
    case queued, built, started, sent, connection, preparationFailed, taskCreated, redirect, response, data, responseBody, uploaded
    case taskCompleted, validationFailed, retryScheduled, retryDenied, hedged, injected, breakpoint, breakpointResolved, breakpointSet, breakpointRemoved
    case circuitWaiting, circuitOpened, circuitHalfOpen, circuitClosed, rateLimitWaiting, rateLimited, retryBudget
    case earlyRetry, intercepted, held, released, reactorStarted, reactorWaiting, reactorFinished, requeued
    case cancelled, finished, missed
    case requestBody, headerFields, messages, trailers
}

extension RequestEvent.Payload {
    /// The kind; nil for one this version does not know (``other(name:)``).
    public var kind: EventKind? {
        switch self {
        case .queued: .queued
        case .built: .built
        case .started: .started
        case .sent: .sent
        case .connection: .connection
        case .preparationFailed: .preparationFailed
        case .taskCreated: .taskCreated
        case .redirect: .redirect
        case .response: .response
        case .data: .data
        case .uploaded: .uploaded
        case .responseBody: .responseBody
        case .requestBody: .requestBody
        case .headerFields: .headerFields
        case .messages: .messages
        case .trailers: .trailers
        case .taskCompleted: .taskCompleted
        case .validationFailed: .validationFailed
        case .retryScheduled: .retryScheduled
        case .retryDenied: .retryDenied
        case .hedged: .hedged
        case .injected: .injected
        case .breakpoint: .breakpoint
        case .breakpointResolved: .breakpointResolved
        case .breakpointSet: .breakpointSet
        case .breakpointRemoved: .breakpointRemoved
        case .circuitWaiting: .circuitWaiting
        case .circuitOpened: .circuitOpened
        case .circuitHalfOpen: .circuitHalfOpen
        case .circuitClosed: .circuitClosed
        case .rateLimitWaiting: .rateLimitWaiting
        case .rateLimited: .rateLimited
        case .retryBudget: .retryBudget
        case .earlyRetry: .earlyRetry
        case .intercepted: .intercepted
        case .held: .held
        case .released: .released
        case .reactorStarted: .reactorStarted
        case .reactorWaiting: .reactorWaiting
        case .reactorFinished: .reactorFinished
        case .requeued: .requeued
        case .cancelled: .cancelled
        case .finished: .finished
        case .missed: .missed
        case .other: nil
        }
    }
}
