import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import XCTest

/// A server can send any number in `Retry-After`. `9223372036854775807` once trapped the
/// process ("Double value cannot be converted to Int") mid-run, so every other operation
/// lost its `finished` and the run its summary. Each value here comes from a real server
/// on loopback, on 503 and 429, with the default policy and with one that allows any delay.
final class HostileRetryAfterTests: XCTestCase {
    private let hugeValues = ["9223372036854775807", "9223372036854775808", "18446744073709551616", "99999999999999999999999"]

    func testHugeRetryAfterValuesEndTheOperationWithTheReasonAndEverythingElseFinishes() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        var hostile: [RequestOperation] = []
        for value in hugeValues {
            for status in [503, 429] {
                hostile.append(queue.add(URLRequest(url: server.url("/status/\(status)?retry-after=\(value)")), id: "ra-\(status)-\(value)"))
            }
        }
        let bystander = queue.add(URLRequest(url: server.url("/echo")), id: "bystander")
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(bystander.result?.outcome, .success)
        for operation in hostile {
            XCTAssertEqual(operation.result?.outcome, .failure, operation.id)
            XCTAssertEqual(operation.attempts.count, 1, "never retried before the server's time: \(operation.id)")
            let reason = operation.attempts.last?.decision ?? ""
            XCTAssert(reason.contains("(Retry-After), longer than the 30s maximum delay; not retried sooner"), reason)
            XCTAssertEqual(recorder.names(of: operation.id).filter { $0 == "finished" }.count, 1, operation.id)
        }
    }

    /// A policy with no maximum delay, no retry budget and no deadline takes the server at
    /// its word and waits: the wait is scheduled without trapping, shown, and cancellable.
    /// Found by the retry-after fuzz target: FoundationNetworking's DateFormatter trapped on
    /// this header value, so one answer from any server ended the process.
    func testNonASCIIDatesAreNotDatesAndNeverReachTheFormatter() {
        for value in ["Wed\u{7F0}ct 21 7:28:10 \u{FFFD}2015", "Wed, 21 Oct 2015 07:28:00 GMT\u{0}", "Mié, 21 Oct 2015 07:28:00 GMT",
                      String(repeating: "Wed, 21 Oct 2015 ", count: 10)] {
            XCTAssertNil(RetryAfter.delay(from: value), value)
        }
        let now = Date(timeIntervalSince1970: 1_445_412_470)
        XCTAssertEqual(RetryAfter.delay(from: "Wed, 21 Oct 2015 07:28:00 GMT", now: now), 10, "real dates still read")
        XCTAssertEqual(RetryAfter.delay(from: "Wednesday, 21-Oct-15 07:28:00 GMT", now: now), 10)
        XCTAssertEqual(RetryAfter.delay(from: "Wed Oct 21 07:28:00 2015", now: now), 10)
    }

    func testAPolicyWithoutLimitsWaitsAndCanBeCancelled() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let unlimited = ExponentialBackoffRetryPolicy(maxDelay: .greatestFiniteMagnitude, retryBudget: nil)
        let waiting = hugeValues.map { value in
            queue.add(URLRequest(url: server.url("/status/503?retry-after=\(value)")), id: "wait-\(value)",
                      options: RequestOptions(retryPolicy: unlimited, deadline: nil))
        }
        waitFor(10, "every operation waiting to retry") {
            waiting.allSatisfy { if case .waitingToRetry = $0.phase { true } else { false } }
        }
        for operation in waiting {
            let decision = operation.attempts.last?.decision ?? ""
            XCTAssert(decision.hasPrefix("status 503; attempt 1 of 3; Retry-After ") && decision.hasSuffix("s"), decision)
        }
        queue.cancelAll()
        queue.waitUntilAllOperationsAreFinished()
        for operation in waiting {
            XCTAssertEqual(operation.result?.outcome, .cancelled, operation.id)
            XCTAssertEqual(recorder.names(of: operation.id).filter { $0 == "finished" }.count, 1, operation.id)
        }
    }

    /// Decorrelated jitter from a base of 1e300 s under a deadline of 1e14 s: both once
    /// reached the same trap. The retry would start after the deadline, so it ends at once.
    func testAHugeBackoffUnderAHugeDeadlineEndsWithTheDeadlineReason() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let decorrelated = ExponentialBackoffRetryPolicy(baseDelay: 1e300, maxDelay: .greatestFiniteMagnitude, jitter: .decorrelated, retryBudget: nil)
        let operation = queue.add(URLRequest(url: server.url("/status/503")), options: RequestOptions(retryPolicy: decorrelated, deadline: 1e14))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.outcome, .failure)
        XCTAssertEqual(operation.attempts.last?.decision, "status 503; the next retry would start after the 100000000000000s deadline")
    }
}
