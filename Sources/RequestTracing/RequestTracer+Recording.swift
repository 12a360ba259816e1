import Foundation
import RequestOperations
import Tracing

/// A recording sent as a trace: the same spans a live run makes, at the times the events
/// carry (`startedAt` + `t`), so a session recorded on a laptop or in CI can be explored in
/// any tracing backend afterwards.
extension RequestTracer {
    /// Makes the spans of `events` (a recording, in its order): a `request` span per
    /// operation from `queued` to `finished`, a `CLIENT` span per attempt from `taskCreated`
    /// (its request as recorded, redacted as recordings are), and the same events and
    /// attributes as live. Returns how many spans were made.
    @discardableResult
    public func send(recording events: [RequestEvent], startedAt: Date) -> Int {
        let origin = startedAt.timeIntervalSince1970
        return state.withLock { state -> Int in
            state.origin = origin
            var requests: [String: (method: String, url: String)] = [:]
            var made = 0
            for event in events.sorted(by: { $0.time < $1.time }) where !event.operationID.isEmpty {
                let id = event.operationID
                let at = Self.instant(origin + event.time)
                switch event.payload {
                case .queued(let method, let url, _, _, _, _):
                    requests[id] = (method, url)
                    if state.operationSpans[id] == nil {
                        let span = tracer.startSpan("request", context: .topLevel, ofKind: .internal, at: at)
                        span.updateAttributes { attributes in
                            attributes["reqtop.operation"] = id
                            attributes[HTTPClientSpanAttributes.method] = method
                            attributes[HTTPClientSpanAttributes.urlFull] = redactor.redact(url: url)
                        }
                        state.operationSpans[id] = span
                        state.contexts[id] = span.context
                        made += 1
                    }
                case .built(let method, let url, _, _):
                    requests[id] = (method, url)
                case .taskCreated(_, let url, _):
                    let method = requests[id]?.method ?? "GET"
                    let span = startAttemptSpan(method: method, url: URL(string: url.isEmpty ? requests[id]?.url ?? "" : url),
                                                operation: id, attempt: event.attempt, parent: state.contexts[id] ?? .topLevel, at: at)
                    for pending in state.pending.removeValue(forKey: id) ?? [] { span.addEvent(pending) }
                    state.spans[id, default: [:]][event.attempt]?.span.end(at: at)
                    state.spans[id, default: [:]][event.attempt] = OpenSpan(span: span)
                    made += 1
                case .started, .sent, .connection, .preparationFailed, .redirect, .response, .data, .uploaded, .responseBody, .requestBody, .headerFields, .messages, .trailers,
                     .taskCompleted, .validationFailed, .retryScheduled, .retryDenied, .hedged, .injected, .breakpoint,
                     .breakpointResolved, .breakpointSet, .breakpointRemoved, .circuitWaiting, .circuitOpened, .circuitHalfOpen,
                     .circuitClosed, .rateLimitWaiting, .rateLimited, .retryBudget, .earlyRetry, .intercepted, .held, .released,
                     .reactorStarted, .reactorWaiting, .reactorFinished, .requeued, .cancelled, .finished, .missed, .other:
                    break
                }
                apply(event, to: &state)
            }
            // A recording cut short: what never finished ends at its last event.
            let last = Self.instant(origin + (events.map(\.time).max() ?? 0))
            for (_, spans) in state.spans { spans.values.forEach { $0.span.end(at: last) } }
            state.operationSpans.values.forEach { $0.end(at: last) }
            state.spans = [:]
            state.operationSpans = [:]
            state.contexts = [:]
            state.pending = [:]
            return made
        }
    }
}
