import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestEventFormat
import RequestOperations
import Synchronization
import Tracing

/// OpenTelemetry-style traces of a request queue: one `CLIENT` span per attempt (retries,
/// reactor requeues and hedged copies each get their own), named by the method and carrying
/// the HTTP client semantic conventions (`http.request.method`, `server.address`,
/// `server.port`, `url.full` redacted as recordings are, `http.response.status_code`,
/// `error.type`, `http.request.resend_count` from the second attempt on).
///
/// The attempts of one operation are siblings under the context that was current when the
/// operation was made (a server handler's span, say): the tracer reads the task-local
/// `ServiceContext` in ``operationCreated(_:request:)``. An operation made with no span
/// current (a script, the command line) gets an `INTERNAL` span of its own, `request`, from
/// its creation to its end, so its attempts still share one trace. Each attempt's request carries the
/// span's context in the tracer's propagation format (`traceparent` with swift-otel), so the
/// upstream's spans join the trace. What happens between attempts — a backoff and its reason,
/// an early retry, a hold by a batch, a breaker or a rate limit, a reactor run — is a span
/// event, so a trace tells the retry story. A cancelled attempt is not an error.
///
/// ```swift
/// let queue = RequestQueue(instruments: [RequestTracer()])   // InstrumentationSystem.tracer
/// ```
///
/// Spans start on the request's path (they must, to be injected) and end from the queue's
/// events, at the times the events carry. Give each queue a tracer of its own: operation ids
/// and event times are the queue's.
public final class RequestTracer: RequestInstrument {
    let tracer: any Tracer
    let redactor: Redactor
    let state = Mutex(State())
    private let subscriptions = Mutex<[EventSubscription]>([])

    struct State {
        /// The caller's context when each operation was made.
        var contexts: [String: ServiceContext] = [:]
        /// The span made for an operation that had no caller's span.
        var operationSpans: [String: any Span] = [:]
        /// Spans not ended yet, by operation and attempt.
        var spans: [String: [Int: OpenSpan]] = [:]
        /// What happened to an operation between attempts, for its next attempt's span.
        var pending: [String: [SpanEvent]] = [:]
        /// Wall-clock seconds at the session's `t` = 0.
        var origin: TimeInterval?
        /// Each host's (`host:port`) circuit breaker as its events last said: `closed`, `open`, `half-open`.
        var breakers: [String: String] = [:]
    }

    struct OpenSpan {
        let span: any Span
        /// The attempt's task completed (`t`): the span ends with the decision that follows.
        var completedAt: TimeInterval?
        /// The response's status (spans need not give their attributes back).
        var status: Int?
    }

    /// - Parameters:
    ///   - tracer: the tracer spans are made with; the bootstrapped one by default (a no-op
    ///     until a program bootstraps one, so nothing is paid then).
    ///   - redactor: the rules `url.full` is redacted by (userinfo, secret query values).
    public init(tracer: any Tracer = InstrumentationSystem.tracer, redactor: Redactor = Redactor()) {
        self.tracer = tracer
        self.redactor = redactor
        isOff = tracer is NoOpTracer
    }

    /// No backend was bootstrapped (the no-op tracer): nothing is done at all, so a library
    /// that installs the tracer costs a program that traces nothing nothing.
    let isOff: Bool

    public func attach(to events: EventHub) {
        guard !isOff else { return }
        let origin = events.startedAt.timeIntervalSince1970
        state.withLock { $0.origin = origin }
        let subscription = events.subscribe(label: "reqtop.tracing") { [self] batch in
            state.withLock { state in batch.forEach { apply($0, to: &state) } }
        }
        subscriptions.withLock { $0.append(subscription) }
    }

    public func operationCreated(_ id: String, request: RequestMessage) {
        guard !isOff else { return }
        if let context = ServiceContext.current {
            state.withLock { $0.contexts[id] = context }
            return
        }
        let span = tracer.startSpan("request", context: .topLevel, ofKind: .internal, at: DefaultTracerClock.now)
        span.updateAttributes { attributes in
            attributes["reqtop.operation"] = id
            attributes[HTTPClientSpanAttributes.method] = request.method
            attributes[HTTPClientSpanAttributes.urlFull] = redactor.redact(url: request.url.absoluteString)
        }
        state.withLock { state in
            state.contexts[id] = span.context
            state.operationSpans[id] = span
        }
    }

    public func willSend(_ request: RequestMessage, operation id: String, attempt: Int) -> RequestMessage {
        guard !isOff else { return request }
        let parent = state.withLock { $0.contexts[id] } ?? .topLevel
        let span = startAttemptSpan(method: request.method, url: request.url, operation: id, attempt: attempt,
                                    parent: parent, at: DefaultTracerClock.now)
        var sent = request
        tracer.inject(span.context, into: &sent, using: RequestMessageInjector())
        let replaced = state.withLock { state -> OpenSpan? in
            for event in state.pending.removeValue(forKey: id) ?? [] { span.addEvent(event) }
            if let host = HostKey(url: request.url)?.description, let breaker = state.breakers[host] {
                span.attributes["reqtop.breaker.state"] = breaker
            }
            defer { state.spans[id, default: [:]][attempt] = OpenSpan(span: span) }
            return state.spans[id]?[attempt]
        }
        // Sent twice under one number (never by the engine): the first span is not left open.
        replaced?.span.end()
        return sent
    }

    /// A `CLIENT` span for one attempt, with the conventions' attributes.
    func startAttemptSpan(method raw: String, url: URL?, operation id: String, attempt: Int, parent: ServiceContext,
                          at instant: DefaultTracerClock.Timestamp) -> any Span {
        let (method, original) = HTTPClientSpanAttributes.method(raw)
        let span = tracer.startSpan(method, context: parent, ofKind: .client, at: instant)
        span.updateAttributes { attributes in
            attributes[HTTPClientSpanAttributes.method] = method
            if let original { attributes[HTTPClientSpanAttributes.methodOriginal] = original }
            if let server = HostKey(url: url) {
                attributes[HTTPClientSpanAttributes.serverAddress] = server.host
                attributes[HTTPClientSpanAttributes.serverPort] = server.port
            }
            attributes[HTTPClientSpanAttributes.urlFull] = redactor.redact(url: url?.absoluteString ?? "")
            if attempt > 1 { attributes[HTTPClientSpanAttributes.resendCount] = attempt - 1 }
            attributes["reqtop.operation"] = id
            attributes["reqtop.attempt"] = attempt
        }
        return span
    }

    /// Spans not ended yet (for tests: zero once every operation finished).
    public var openSpanCount: Int {
        state.withLock { $0.spans.values.reduce(0) { $0 + $1.count } + $0.operationSpans.count }
    }
}
