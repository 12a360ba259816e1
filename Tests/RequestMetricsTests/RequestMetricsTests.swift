import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import CoreMetrics
import MetricsTestKit
@testable import RequestMetrics
import RequestOperations
import XCTest

/// The metrics of real requests to the fault server, read from swift-metrics' own test
/// backend: per-attempt durations with the conventions' dimensions, active requests back to
/// zero, retries by reason, outcomes, breaker states.
final class RequestMetricsTests: XCTestCase {
    private func startServer() throws -> FaultServer {
        let server = try FaultServer.start(port: 0)
        addTeardownBlock { server.stop() }
        return server
    }

    private static let quick = ExponentialBackoffRetryPolicy(maxAttempts: 3, baseDelay: 0.01, multiplier: 1, maxDelay: 0.01, jitter: .none)

    func testAttemptsRetriesAndOutcomesAreCountedWithTheConventionsDimensions() throws {
        let server = try startServer()
        let metrics = TestMetrics()
        let queue = RequestQueue(earlyRetry: nil, circuitBreaker: nil, instruments: [RequestMetrics(factory: metrics)])
        let key = "m\(UInt32.random(in: 0 ... .max))"
        queue.add(URLRequest(url: server.url("/flaky/\(key)?failures=2&status=503")), options: RequestOptions(retryPolicy: Self.quick))
        queue.add(URLRequest(url: server.url("/status/404")), options: RequestOptions(retryPolicy: Self.quick))
        queue.waitUntilAllOperationsAreFinished()
        queue.events.waitUntilDelivered()

        let base = [("http.request.method", "GET"), ("server.address", "127.0.0.1"), ("server.port", "\(server.port)")]
        let failed = try metrics.expectTimer("http.client.request.duration", base + [("http.response.status_code", "503"), ("error.type", "503")])
        XCTAssertEqual(failed.values.count, 2, "two attempts answered 503")
        let ok = try metrics.expectTimer("http.client.request.duration", base + [("http.response.status_code", "200")])
        XCTAssertEqual(ok.values.count, 1)
        XCTAssert(ok.values.allSatisfy { $0 > 0 && $0 < 5_000_000_000 }, "nanoseconds of a real request: \(ok.values)")
        XCTAssertEqual(try metrics.expectTimer("http.client.request.duration", base + [("http.response.status_code", "404"), ("error.type", "404")]).values.count, 1)
        XCTAssertEqual(try metrics.expectMeter("http.client.active_requests", base).lastValue, 0, "every attempt counted out")
        let retries = try metrics.expectCounter("reqtop.retries", [("server.address", "127.0.0.1"), ("server.port", "\(server.port)"), ("reason", "503")])
        XCTAssertEqual(retries.totalValue, 2)
        XCTAssertEqual(try metrics.expectTimer("reqtop.retry.wait", [("server.address", "127.0.0.1"), ("server.port", "\(server.port)")]).values,
                       [10_000_000, 10_000_000])
        XCTAssertEqual(try metrics.expectCounter("reqtop.operations", base + [("outcome", "success")]).totalValue, 1)
        XCTAssertEqual(try metrics.expectCounter("reqtop.operations", base + [("outcome", "failure")]).totalValue, 1, "the 404 is not retried")
        let labels = Set(metrics.counters.map(\.label) + metrics.timers.map(\.label) + metrics.meters.map(\.label))
        XCTAssertEqual(labels, ["http.client.request.duration", "http.client.active_requests", "reqtop.retries", "reqtop.retry.wait", "reqtop.operations"])
        let dimensionNames = Set((metrics.counters.flatMap(\.dimensions) + metrics.timers.flatMap(\.dimensions)).map(\.0))
        XCTAssertFalse(dimensionNames.contains("url.full"), "never a URL: a series per request")
    }

    func testWithNoBackendThereIsNoSubscription() {
        let queue = RequestQueue(instruments: [RequestMetrics(factory: NOOPMetricsHandler.instance)])
        XCTAssertEqual(queue.events.subscriberCount, 0)
    }

    func testACancelledRequestLeavesNoActiveRequestBehindAndBreakersAreGauges() throws {
        let server = try startServer()
        let metrics = TestMetrics()
        let queue = RequestQueue(earlyRetry: nil, instruments: [RequestMetrics(factory: metrics)])
        let hanging = queue.add(URLRequest(url: server.url("/hang")))
        let end = Date().addingTimeInterval(5)
        while server.counters.hits("/hang") == 0, Date() < end { usleep(5_000) }
        hanging.cancel()
        queue.waitUntilAllOperationsAreFinished()
        queue.events.waitUntilDelivered()
        let base = [("http.request.method", "GET"), ("server.address", "127.0.0.1"), ("server.port", "\(server.port)")]
        XCTAssertEqual(try metrics.expectMeter("http.client.active_requests", base).lastValue, 0)
        XCTAssertEqual(try metrics.expectCounter("reqtop.operations", base + [("outcome", "cancelled")]).totalValue, 1)

        queue.environment.circuitBreaker?.isolate("127.0.0.1:9", by: "test")
        queue.events.waitUntilDelivered()
        XCTAssertEqual(try metrics.expectGauge("reqtop.circuit.state", [("server.address", "127.0.0.1"), ("server.port", "9")]).lastValue, 2)
        queue.environment.circuitBreaker?.close("127.0.0.1:9", by: "test")
        queue.events.waitUntilDelivered()
        XCTAssertEqual(try metrics.expectGauge("reqtop.circuit.state", [("server.address", "127.0.0.1"), ("server.port", "9")]).lastValue, 0)
    }
}
