import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import InMemoryTracing
import RequestOperations
@testable import RequestTracing
import Tracing
import XCTest

/// Spans per attempt against the fault server, read from swift-distributed-tracing's own
/// in-memory tracer (not a reader of ours): one CLIENT span per attempt under the caller's
/// span, the HTTP client conventions' attributes, the retry story as span events, and the
/// span's context in the request the server received.
final class RequestTracerTests: XCTestCase {
    private func startServer() throws -> FaultServer {
        let server = try FaultServer.start(port: 0)
        addTeardownBlock { server.stop() }
        return server
    }

    private func queue(_ tracer: InMemoryTracer) -> (RequestQueue, RequestTracer) {
        let instrument = RequestTracer(tracer: tracer)
        let queue = RequestQueue(earlyRetry: nil, circuitBreaker: nil, instruments: [instrument])
        return (queue, instrument)
    }

    private func finish(_ queue: RequestQueue, _ instrument: RequestTracer) {
        queue.waitUntilAllOperationsAreFinished()
        queue.events.waitUntilDelivered()
        XCTAssertEqual(instrument.openSpanCount, 0, "every span ended with its operation")
    }

    private static let quick = ExponentialBackoffRetryPolicy(maxAttempts: 3, baseDelay: 0.01, multiplier: 1, maxDelay: 0.01, jitter: .none)

    func testEachAttemptIsAClientSpanUnderTheCallersSpanWithTheConventionsAttributes() throws {
        let server = try startServer()
        let tracer = InMemoryTracer()
        let (queue, instrument) = queue(tracer)
        let parent = tracer.startSpan("handle order", context: .topLevel, ofKind: .server)
        let key = "t\(UInt32.random(in: 0 ... .max))"
        let url = server.url("/flaky/\(key)?failures=2&status=503&api_key=s3cret")
        let op = ServiceContext.withValue(parent.context) {
            queue.add(URLRequest(url: url), id: "order", options: RequestOptions(retryPolicy: Self.quick))
        }
        finish(queue, instrument)
        parent.end()
        XCTAssertEqual(op.result?.outcome, .success)

        let spans = tracer.finishedSpans.filter { $0.kind == .client }
        XCTAssertEqual(spans.count, 3, "one span per attempt")
        XCTAssertEqual(Set(spans.map(\.operationName)), ["GET"])
        XCTAssertEqual(Set(spans.map(\.traceID)), [parent.traceID], "one trace")
        XCTAssertEqual(Set(spans.map(\.parentSpanID)), [parent.spanID], "attempts are siblings under the caller's span")
        func attempt(_ span: FinishedInMemorySpan) -> Int64 {
            if case .int64(let number)? = span.attributes.get("reqtop.attempt") { number } else { 0 }
        }
        let ordered = spans.sorted { attempt($0) < attempt($1) }
        XCTAssertEqual(ordered.map { $0.attributes.get("http.response.status_code") }, [.int64(503), .int64(503), .int64(200)])
        XCTAssertEqual(ordered.map { $0.attributes.get("http.request.resend_count") }, [nil, .int64(1), .int64(2)])
        XCTAssertEqual(ordered.map { $0.attributes.get("error.type") }, [.string("503"), .string("503"), nil])
        XCTAssertEqual(ordered.map { $0.status?.code }, [.error, .error, nil])
        let first = ordered[0]
        XCTAssertEqual(first.attributes.get("http.request.method"), .string("GET"))
        XCTAssertEqual(first.attributes.get("server.address"), .string("127.0.0.1"))
        XCTAssertEqual(first.attributes.get("server.port"), .int64(Int64(server.port)))
        guard case .string(let full)? = first.attributes.get("url.full") else { return XCTFail("no url.full") }
        XCTAssertFalse(full.contains("s3cret"), "secret query values are redacted: \(full)")
        XCTAssertTrue(full.contains("/flaky/\(key)"), full)
        XCTAssertEqual(ordered.map { $0.events.map(\.name) }, [["retry scheduled"], ["retry scheduled"], []])
        guard case .string(let reason)? = ordered[0].events.first?.attributes.get("reqtop.retry.reason") else { return XCTFail("no reason") }
        XCTAssertTrue(reason.contains("503"), reason)
        XCTAssert(zip(ordered, ordered.dropFirst()).allSatisfy { $0.endInstant.nanosecondsSinceEpoch <= $1.startInstant.nanosecondsSinceEpoch },
                  "each attempt ends before the next begins")
    }

    func testTheRequestCarriesItsSpansContextToTheServer() throws {
        let server = try startServer()
        let tracer = InMemoryTracer()
        let (queue, instrument) = queue(tracer)
        let op = queue.add(URLRequest(url: server.url("/echo")), id: "echo")
        finish(queue, instrument)
        let span = try XCTUnwrap(tracer.finishedSpans.first { $0.kind == .client })
        let echo = try XCTUnwrap(JSONSerialization.jsonObject(with: op.result?.data ?? Data()) as? [String: Any])
        let headers = (echo["headers"] as? [String: String] ?? [:]).reduce(into: [String: String]()) { $0[$1.key.lowercased()] = $1.value }
        XCTAssertEqual(headers[InMemoryTracer.traceIDKey], span.traceID, "the server saw the span's trace")
        XCTAssertEqual(headers[InMemoryTracer.spanIDKey], span.spanID, "and its span, as the upstream's parent")
        let root = try XCTUnwrap(tracer.finishedSpans.first { $0.kind == .internal })
        XCTAssertEqual(root.operationName, "request", "no caller's span: the operation gets one")
        XCTAssertEqual(span.parentSpanID, root.spanID)
        XCTAssertNil(root.parentSpanID)
        XCTAssertEqual(root.attributes.get("reqtop.outcome"), .string("success"))
    }

    func testAFailureToConnectIsAnErrorAndACancelIsNot() throws {
        let server = try startServer()
        let tracer = InMemoryTracer()
        let (queue, instrument) = queue(tracer)
        // A port nothing listens on: bound and closed at once.
        let dead = try FaultServer.start(port: 0)
        let deadURL = dead.url("/echo")
        dead.stop()
        queue.add(URLRequest(url: deadURL), id: "refused", options: RequestOptions(retryPolicy: .never))
        let hanging = queue.add(URLRequest(url: server.url("/hang")), id: "hanging")
        XCTAssertTrue(waitFor { server.counters.hits("/hang") == 1 })
        hanging.cancel()
        finish(queue, instrument)
        let byOperation = Dictionary(grouping: tracer.finishedSpans.filter { $0.kind == .client }) { span -> String in
            if case .string(let id)? = span.attributes.get("reqtop.operation") { id } else { "" }
        }
        let refused = try XCTUnwrap(byOperation["refused"]?.first)
        XCTAssertEqual(refused.attributes.get("error.type"), .string("connection_refused"))
        XCTAssertEqual(refused.status?.code, .error)
        let cancelled = try XCTUnwrap(byOperation["hanging"]?.first)
        XCTAssertNil(cancelled.attributes.get("error.type"), "cancelled is not an error")
        XCTAssertNotEqual(cancelled.status?.code, .error)
        XCTAssertEqual(cancelled.events.map(\.name), ["cancelled"])
    }

    func testAHedgedCopyIsASpanOfItsOwnAndTheLoserIsCancelledNotFailed() throws {
        let server = try startServer()
        let tracer = InMemoryTracer()
        let (queue, instrument) = queue(tracer)
        let url = server.url("/flaky/h\(UInt32.random(in: 0 ... .max))?failures=1&status=slow&ms=3000")
        queue.add(URLRequest(url: url), id: "read", options: RequestOptions(hedge: .hedge(after: 0.1)))
        finish(queue, instrument)
        let spans = tracer.finishedSpans.filter { $0.kind == .client }
        XCTAssertEqual(spans.count, 2)
        let copy = try XCTUnwrap(spans.first { $0.attributes.get("reqtop.attempt") == .int64(2) })
        let first = try XCTUnwrap(spans.first { $0.attributes.get("reqtop.attempt") == .int64(1) })
        XCTAssertEqual(copy.attributes.get("http.request.resend_count"), .int64(1))
        XCTAssertEqual(copy.attributes.get("http.response.status_code"), .int64(200))
        XCTAssertEqual(copy.events.map(\.name), ["hedge"])
        XCTAssertEqual(first.attributes.get("reqtop.hedge.cancelled"), .string("cancelled by hedge: attempt 2 answered first"))
        XCTAssertNil(first.status, "the copy that lost is not an error")
    }

    /// No tracer bootstrapped: the no-op tracer, and the instrument does nothing at all (no
    /// subscription, no header, no state), so installing it costs nothing.
    /// What a fleet's traces are searched by (docs/fleet.md): an injected attempt says so and
    /// by whom, and an attempt says its host's breaker as the tracer last heard of it.
    func testAnAttemptSaysItWasInjectedAndItsHostsBreakerState() throws {
        let server = try startServer()
        let tracer = InMemoryTracer()
        let (queue, instrument) = queue(tracer)
        queue.faults.add(FaultRule(match: try RequestMatch("path:/status/204"), effect: .status(503, retryAfter: nil), setBy: "monitor"))
        queue.add(URLRequest(url: server.url("/status/204")), id: "injected", options: RequestOptions(retryPolicy: .never))
        finish(queue, instrument)
        let injected = try XCTUnwrap(tracer.finishedSpans.first { $0.kind == .client })
        XCTAssertEqual(injected.attributes.get("reqtop.injected"), .string("status 503"))
        XCTAssertEqual(injected.attributes.get("reqtop.injected.by"), .string("monitor"))
        XCTAssertNil(injected.attributes.get("reqtop.breaker.state"), "no breaker heard of: none said")

        // The host's breaker half-open (as its event says): the next attempt is its probe.
        queue.events.publish(operation: "", attempt: 0, .circuitHalfOpen(host: "127.0.0.1:\(server.port)"))
        queue.events.waitUntilDelivered()
        queue.add(URLRequest(url: server.url("/echo")), id: "probe", options: RequestOptions(retryPolicy: .never))
        finish(queue, instrument)
        let probe = try XCTUnwrap(tracer.finishedSpans.first { $0.kind == .client && $0.attributes.get("reqtop.operation") == .string("probe") })
        XCTAssertEqual(probe.attributes.get("reqtop.breaker.state"), .string("half-open"))
        XCTAssertNil(probe.attributes.get("reqtop.injected"))
    }

    func testWithNoBackendNothingIsDone() throws {
        let server = try startServer()
        let instrument = RequestTracer(tracer: NoOpTracer())
        let queue = RequestQueue(instruments: [instrument])
        XCTAssertEqual(queue.events.subscriberCount, 0, "no subscription")
        let op = queue.add(URLRequest(url: server.url("/echo")))
        queue.waitUntilAllOperationsAreFinished()
        let echo = try XCTUnwrap(JSONSerialization.jsonObject(with: op.result?.data ?? Data()) as? [String: Any])
        XCTAssertFalse((echo["headers"] as? [String: String] ?? [:]).keys.contains { $0.lowercased() == "traceparent" })
        XCTAssertEqual(instrument.openSpanCount, 0)
    }

    private func waitFor(_ timeout: TimeInterval = 5, _ condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if condition() { return true }
            usleep(5_000)
        }
        return false
    }
}
