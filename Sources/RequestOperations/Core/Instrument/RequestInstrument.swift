import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sees, synchronously and on the thread that does it, what must be acted on at that very
/// moment rather than later from events: an operation being made (in its caller's task, so
/// task-locals such as a trace's context are the caller's) and each request an attempt or a
/// hedged copy hands to the transport (so headers such as W3C `traceparent` can be added).
/// Everything else an instrument wants it reads from the queue's events, which it gets in
/// ``attach(to:)``.
///
/// The `RequestTracing` module's `RequestTracer` is one (OpenTelemetry spans per attempt);
/// the engine itself knows no tracing library. `RequestQueue(instruments:)` installs them.
/// Keep both calls quick: they run on the request's path.
public protocol RequestInstrument: Sendable {
    /// The queue that uses this instrument was made: subscribe to its events here.
    func attach(to events: EventHub)
    /// Operation `id` was made, for `request`, in its caller's task.
    func operationCreated(_ id: String, request: RequestMessage)
    /// Attempt `attempt` of operation `id` (or a hedged copy, with its own number) is about
    /// to be handed to the transport: returns the request to send (by default, `request`).
    func willSend(_ request: RequestMessage, operation id: String, attempt: Int) -> RequestMessage
}

extension RequestInstrument {
    public func attach(to events: EventHub) {}
    public func operationCreated(_ id: String, request: RequestMessage) {}
    public func willSend(_ request: RequestMessage, operation id: String, attempt: Int) -> RequestMessage { request }
}
