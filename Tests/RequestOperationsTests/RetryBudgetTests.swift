import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import XCTest

/// Retries per host capped at a share of its requests (Finagle's retry budget): exact with
/// the manual clock, and end to end against an always-503 route.
final class RetryBudgetTests: XCTestCase {
    func testRetriesAreAShareOfRequestsPlusAFloorAndRefusalsSayWhy() {
        let clock = ManualClock()
        let budget = RatioRetryBudget(options: .init(percent: 0.2, window: 10, minRetriesPerSecond: 0.5), clock: clock)
        // No requests yet: only the floor, 0.5 a second over 10 s.
        for _ in 0..<5 { XCTAssertNil(budget.spendRetry(on: "a:80")) }
        XCTAssertEqual(budget.spendRetry(on: "a:80"), "retry budget for a:80 exhausted: 20 % of requests in 10s, plus 0.5 a second")
        // 100 requests add 20 retries.
        for _ in 0..<100 { budget.requestSent(to: "a:80") }
        XCTAssertEqual(budget.balance(for: "a:80"), .init(requests: 100, retries: 5, left: 20))
        for _ in 0..<20 { XCTAssertNil(budget.spendRetry(on: "a:80")) }
        XCTAssertNotNil(budget.spendRetry(on: "a:80"))
        XCTAssertEqual(budget.balance(for: "a:80").left, 0)
        // Another host has its own budget.
        XCTAssertNil(budget.spendRetry(on: "b:80"))
    }

    func testRequestsAndRetriesLeaveTheWindowAfterItsLength() {
        let clock = ManualClock(now: 0)
        let budget = RatioRetryBudget(options: .init(percent: 0.5, window: 10, minRetriesPerSecond: 0), clock: clock)
        for _ in 0..<10 { budget.requestSent(to: "h") }
        for _ in 0..<5 { XCTAssertNil(budget.spendRetry(on: "h")) }
        XCTAssertNotNil(budget.spendRetry(on: "h"), "5 of 10")
        clock.advance(by: 5)
        for _ in 0..<4 { budget.requestSent(to: "h") }
        XCTAssertEqual(budget.balance(for: "h"), .init(requests: 14, retries: 5, left: 2))
        clock.advance(by: 5.5)  // the first 10 requests and 5 retries are older than 10 s
        XCTAssertEqual(budget.balance(for: "h"), .init(requests: 4, retries: 0, left: 2))
        clock.advance(by: 10)
        XCTAssertEqual(budget.balance(for: "h"), .init(requests: 0, retries: 0, left: 0))
        XCTAssertNotNil(budget.spendRetry(on: "h"), "no requests and no floor: no retries")
    }

    /// The measure: 200 requests to a route that always answers 503, five attempts
    /// each. Without the budget: 800 retries. With the default (20 % + 10 a second over
    /// 10 s): at most 40 + 100, well under a quarter.
    func testAnAlways503RouteGetsAFractionOfTheRetriesAndEachRefusalIsAnEvent() throws {
        func run(budget: RatioRetryBudget.Options?) throws -> (retries: Int, queue: RequestQueue, recorder: EventRecorder, ops: [RequestOperation]) {
            let server = try startServer()
            // No breaker: an always-503 host would open it and hold the requests; this measures the budget alone.
            let queue = makeQueue(maxConcurrentRequests: 16, earlyRetry: nil, retryBudget: budget, circuitBreaker: nil)
            let recorder = EventRecorder(queue.events)
            let options = RequestOptions(retryPolicy: quickPolicy(maxAttempts: 5, baseDelay: 0.001))
            let ops = (0..<200).map { queue.add(URLRequest(url: server.url("/status/503")), id: "r\($0)", options: options) }
            queue.waitUntilAllOperationsAreFinished()
            return (server.counters.hits("/status/503") - 200, queue, recorder, ops)
        }
        let unbounded = try run(budget: nil)
        XCTAssertEqual(unbounded.retries, 800)
        let capped = try run(budget: .init())
        XCTAssertLessThanOrEqual(capped.retries, 140, "20 % of 200 plus 10 a second over 10 s")
        XCTAssertLessThanOrEqual(capped.retries * 4, unbounded.retries, "at most a quarter")
        let denied = capped.ops.filter { $0.result?.error?.stage == .retryBudget }
        XCTAssertGreaterThan(denied.count, 100)
        let first = try XCTUnwrap(denied.first)
        let host = try XCTUnwrap(first.request.url.flatMap { HostKey(url: $0) }?.description)
        let events = capped.recorder.events(of: first.id).map(\.payload)
        XCTAssert(events.contains(.retryDenied(reason: "retry budget for \(host) exhausted: 20 % of requests in 10s, plus 10 a second")), "\(events)")
        XCTAssertEqual(first.result?.outcome, .failure)
        XCTAssertEqual(first.result?.error.map { "\($0)" }, "status 503; retry budget for \(host) exhausted: 20 % of requests in 10s, plus 10 a second")
        XCTAssert(capped.ops.allSatisfy { $0.result?.outcome == .failure })
        // Each retry asked tells what the host's budget still allows (host-level, for the Hosts view).
        let lefts = capped.recorder.all.compactMap { event -> Int? in
            if case .retryBudget(host, let left) = event.payload, event.operationID.isEmpty { left } else { nil }
        }
        XCTAssertEqual(lefts.count, capped.ops.filter { $0.result?.attempts.count ?? 0 > 1 }.count + denied.count
                       + capped.ops.map { max(0, ($0.result?.attempts.count ?? 1) - 2) }.reduce(0, +), "one per retry asked")
        XCTAssertEqual(lefts.last, 0, "spent")
        XCTAssertTrue(unbounded.recorder.all.allSatisfy { $0.payload.name != "retryBudget" }, "no budget, no budget events")
    }
}
