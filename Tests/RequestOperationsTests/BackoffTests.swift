import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import XCTest

/// Backoff arithmetic with an injected clock: exact delays, no sleeping through them.
final class BackoffTests: XCTestCase {
    func testTheNextAttemptStartsExactlyWhenTheBackoffEnds() throws {
        let server = try startServer()
        let clock = ManualClock(now: 500)
        let queue = makeQueue(clock: clock, random: ConstantRandomSource(0.5), earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let policy = ExponentialBackoffRetryPolicy(maxAttempts: 3, baseDelay: 2, multiplier: 3, maxDelay: 60, jitter: .equal)
        let operation = queue.add(URLRequest(url: server.url("/flaky/m?failures=2")), id: "m", options: RequestOptions(retryPolicy: policy))

        // Attempt 1 fails; equal jitter at 0.5 → 2/2 + 0.5 × 2/2 = 1.5 s.
        waitFor(5, "the first backoff") { operation.phase == .waitingToRetry(until: 501.5) }
        usleep(100_000)
        XCTAssertEqual(server.counters.hits("/flaky/m"), 1, "retried before the clock moved")
        clock.advance(by: 1.499)
        usleep(50_000)
        XCTAssertEqual(server.counters.hits("/flaky/m"), 1, "retried early")
        clock.advance(by: 0.001)

        // Attempt 2 fails; 6/2 + 0.5 × 6/2 = 4.5 s.
        // The phase shows the wait a moment before its timer exists: moving the clock in between
        // would move it past a timer not yet made.
        waitFor(5, "the second backoff") { operation.phase == .waitingToRetry(until: 506) && clock.nextDeadline == 506 }
        XCTAssertEqual(server.counters.hits("/flaky/m"), 2)
        clock.advance(by: 4.5)
        queue.waitUntilAllOperationsAreFinished()

        XCTAssertEqual(operation.result?.outcome, .success)
        let scheduled = recorder.events(of: "m").compactMap { event -> TimeInterval? in
            if case .retryScheduled(let delay, _) = event.payload { return delay }
            return nil
        }
        XCTAssertEqual(scheduled, [1.5, 4.5])
        XCTAssertEqual(operation.attempts.map(\.retryDelay), [1.5, 4.5, nil])
    }

    func testRetryAfterFromTheServerSetsTheWait() throws {
        let server = try startServer()
        let clock = ManualClock()
        let queue = makeQueue(clock: clock, earlyRetry: nil)
        let operation = queue.add(URLRequest(url: server.url("/flaky/ra?failures=1&status=429&retry-after=7")))
        let now = clock.now()
        waitFor(5, "the backoff and its timer") { operation.phase == .waitingToRetry(until: now + 7) && clock.nextDeadline == now + 7 }
        clock.advance(by: 7)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.outcome, .success)
        XCTAssertEqual(operation.attempts.first?.decision, "status 429; attempt 1 of 3; Retry-After 7s")
    }

    func testAnOperationInBackoffHoldsNoConcurrencySlot() throws {
        let server = try startServer()
        let queue = makeQueue(maxConcurrentRequests: 2, earlyRetry: nil)
        let slow = ExponentialBackoffRetryPolicy(maxAttempts: 2, baseDelay: 30, jitter: .none, retryBudget: nil)
        let waiting = (1...2).map { index in
            queue.add(URLRequest(url: server.url("/status/503?n=\(index)")), options: RequestOptions(retryPolicy: slow))
        }
        waitFor(5, "two operations in backoff") {
            waiting.allSatisfy { if case .waitingToRetry = $0.phase { true } else { false } }
        }
        XCTAssertEqual(queue.environment.gate?.inUse, 0)
        let third = queue.add(URLRequest(url: server.url("/echo")))
        waitFor(5, "the third operation to run") { third.result != nil }
        XCTAssertEqual(third.result?.outcome, .success)
        queue.cancelAll()
        queue.waitUntilAllOperationsAreFinished()
    }

    func testTheOperationDeadlineStopsRetriesThatWouldStartAfterIt() throws {
        let server = try startServer()
        let clock = ManualClock()
        let queue = makeQueue(clock: clock, earlyRetry: nil)
        let policy = ExponentialBackoffRetryPolicy(maxAttempts: 5, baseDelay: 10, jitter: .none)
        let operation = queue.add(URLRequest(url: server.url("/status/503")), options: RequestOptions(retryPolicy: policy, deadline: 5))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.outcome, .failure)
        XCTAssertEqual(operation.attempts.last?.decision, "status 503; the next retry would start after the 5s deadline")
    }

    /// Numbers a server can send in `Retry-After` must not trap where delays are written or
    /// scheduled (they crashed the process mid-run).
    func testHugeDelaysAreWrittenAndScheduledWithoutTrapping() {
        XCTAssertEqual(DurationText.format(2), "2s")
        XCTAssertEqual(DurationText.format(0.25), "0.25s")
        XCTAssertEqual(DurationText.format(9_223_372_036_854_775_808.0), "9223372036854775808s")
        XCTAssertEqual(DurationText.format(1e300).hasSuffix("s"), true)
        XCTAssertEqual(DurationText.format(.infinity), "infs")
        let clock = SystemClock()
        let timer = clock.schedule(at: clock.now() + 9_223_372_036_854_775_808.0) {}
        timer.cancel()
    }
}
