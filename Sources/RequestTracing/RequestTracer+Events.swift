import Foundation
import RequestOperations
import Tracing

/// How the queue's events end the attempt spans and tell the retry story on them.
extension RequestTracer {
    func apply(_ event: RequestEvent, to state: inout State) {
        // Each host's breaker as last heard, for the attempt spans that follow (a fleet's
        // traces then say which attempts were a half-open breaker's probes). Only these three
        // kinds are read here; the switch below lists every kind it leaves out.
        if case .circuitOpened(let host, _, _) = event.payload {
            state.breakers[host] = "open"
        } else if case .circuitHalfOpen(let host) = event.payload {
            state.breakers[host] = "half-open"
        } else if case .circuitClosed(let host, _) = event.payload {
            state.breakers[host] = "closed"
        }
        guard !event.operationID.isEmpty, let origin = state.origin else { return }
        let id = event.operationID
        let at = Self.instant(origin + event.time)
        switch event.payload {
        case .response(let status, _, _, _):
            state.spans[id]?[event.attempt]?.span.attributes[HTTPClientSpanAttributes.statusCode] = status
            state.spans[id]?[event.attempt]?.status = status
        case .redirect(let status, let location, _, _):
            addEvent("redirect", at: at, ["http.response.status_code": .int64(Int64(status)), "url.full": .string(redactor.redact(url: location))],
                     to: id, attempt: event.attempt, in: &state)
        case .taskCompleted(let error):
            guard var open = state.spans[id]?[event.attempt] else { return }
            if let error, error.isHedgeCancellation {
                // A hedged copy that lost the race (or outlived its attempt): cancelled, not failed.
                open.span.attributes["reqtop.hedge.cancelled"] = error.message
                open.span.end(at: at)
                state.spans[id]?[event.attempt] = nil
                return
            }
            if let error, error.code != URLError.Code.cancelled.rawValue {
                open.span.attributes[HTTPClientSpanAttributes.errorType] = error.kind
                open.span.setStatus(SpanStatus(code: .error, message: error.message))
            } else if error == nil, let status = open.status, status >= 400 {
                // For a client span every 4xx and 5xx is an error (the conventions).
                open.span.attributes[HTTPClientSpanAttributes.errorType] = "\(status)"
                open.span.setStatus(SpanStatus(code: .error))
            }
            open.completedAt = event.time
            state.spans[id]?[event.attempt] = open
        case .retryScheduled(let delay, let reason):
            addEvent("retry scheduled", at: at, ["reqtop.retry.delay": .double(delay), "reqtop.retry.reason": .string(reason)],
                     to: id, attempt: event.attempt, in: &state)
            end(id, attempt: event.attempt, at: at, in: &state)
        case .retryDenied(let reason):
            addEvent("retry denied", at: at, ["reqtop.retry.reason": .string(reason)], to: id, attempt: event.attempt, in: &state)
        case .hedged(let racing, let after):
            addEvent("hedge", at: at, ["reqtop.hedge.racing": .int64(Int64(racing)), "reqtop.hedge.after": .double(after)],
                     to: id, attempt: event.attempt, in: &state)
        case .earlyRetry(let trigger, let delay):
            pend("early retry", at: at, ["reqtop.retry.trigger": .string(trigger), "reqtop.retry.delay": .double(delay)], for: id, in: &state)
        case .held(let batch):
            pend("held", at: at, ["reqtop.batch": .string(batch)], for: id, in: &state)
        case .released(let batch, let size):
            pend("released", at: at, ["reqtop.batch": .string(batch), "reqtop.batch.size": .int64(Int64(size))], for: id, in: &state)
        case .circuitWaiting(let host):
            pend("waiting for circuit breaker", at: at, ["server.address": .string(host)], for: id, in: &state)
        case .rateLimitWaiting(let host, let until):
            pend("waiting for rate limit", at: at, ["server.address": .string(host), "reqtop.wait": .double(max(0, until - event.time))],
                 for: id, in: &state)
        case .reactorStarted(let name, let trigger):
            endCompleted(id, at: at, in: &state)
            pend("reactor started", at: at, ["reqtop.reactor": .string(name), "reqtop.reactor.trigger": .string(trigger)], for: id, in: &state)
        case .reactorWaiting(let name):
            pend("waiting for reactor", at: at, ["reqtop.reactor": .string(name)], for: id, in: &state)
        case .reactorFinished(let name, let outcome):
            pend("reactor finished", at: at, ["reqtop.reactor": .string(name), "reqtop.reactor.outcome": .string(outcome.description)], for: id, in: &state)
        case .requeued(let by, let reason):
            endCompleted(id, at: at, in: &state)
            pend("requeued", at: at, ["reqtop.reactor": .string(by), "reqtop.retry.reason": .string(reason)], for: id, in: &state)
        case .cancelled(let by):
            for open in (state.spans[id] ?? [:]).values { open.span.addEvent(SpanEvent(name: "cancelled", at: at, attributes: ["reqtop.cancelled.by": .string(by)])) }
        case .finished(let outcome, _, _, _, let reason):
            for (_, open) in state.spans.removeValue(forKey: id) ?? [:] {
                if outcome == .failure, let reason, open.completedAt == nil {
                    open.span.setStatus(SpanStatus(code: .error, message: reason))
                }
                open.span.end(at: at)
            }
            if let span = state.operationSpans.removeValue(forKey: id) {
                span.attributes["reqtop.outcome"] = outcome.rawValue
                if outcome == .failure { span.setStatus(SpanStatus(code: .error, message: reason)) }
                span.end(at: at)
            }
            state.contexts[id] = nil
            state.pending[id] = nil
        case .injected(let fault, _, let by):
            // What follows on this attempt is reqtop's doing, not the server's.
            state.spans[id]?[event.attempt]?.span.attributes["reqtop.injected"] = fault
            state.spans[id]?[event.attempt]?.span.attributes["reqtop.injected.by"] = by
        case .queued, .built, .started, .sent, .connection, .preparationFailed, .taskCreated, .data, .uploaded, .responseBody, .requestBody, .headerFields, .messages, .trailers,
             .validationFailed, .breakpoint, .breakpointResolved, .breakpointSet, .breakpointRemoved, .circuitOpened,
             .circuitHalfOpen, .circuitClosed, .rateLimited, .retryBudget, .intercepted, .missed, .other:
            break
        }
    }

    private func addEvent(_ name: String, at instant: DefaultTracerClock.Timestamp, _ attributes: SpanAttributes, to id: String, attempt: Int,
                          in state: inout State) {
        state.spans[id]?[attempt]?.span.addEvent(SpanEvent(name: name, at: instant, attributes: attributes))
    }

    /// A wait before the operation's next attempt: on that attempt's span when it starts.
    private func pend(_ name: String, at instant: DefaultTracerClock.Timestamp, _ attributes: SpanAttributes, for id: String,
                      in state: inout State) {
        state.pending[id, default: []].append(SpanEvent(name: name, at: instant, attributes: attributes))
    }

    private func end(_ id: String, attempt: Int, at instant: DefaultTracerClock.Timestamp, in state: inout State) {
        state.spans[id]?.removeValue(forKey: attempt)?.span.end(at: instant)
    }

    /// Ends the spans of attempts whose tasks completed (a reactor takes over).
    private func endCompleted(_ id: String, at instant: DefaultTracerClock.Timestamp, in state: inout State) {
        for (attempt, open) in state.spans[id] ?? [:] where open.completedAt != nil {
            open.span.end(at: instant)
            state.spans[id]?[attempt] = nil
        }
    }

    static func instant(_ seconds: TimeInterval) -> DefaultTracerClock.Timestamp {
        DefaultTracerClock.Timestamp(nanosecondsSinceEpoch: UInt64(max(0, seconds) * 1_000_000_000))
    }
}
