import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import XCTest

final class RetryPolicyTests: XCTestCase {
    private func context(_ failure: AttemptFailure, method: String = "GET", attempt: Int = 1, headers: [String: String] = [:],
                         elapsed: TimeInterval = 0, previous: TimeInterval? = nil, random: Double = 0.5,
                         now: Date = Date(timeIntervalSince1970: 1_700_000_000)) -> RetryContext {
        RetryContext(method: method, headers: headers, attempt: attempt, failure: failure, elapsed: elapsed,
                     previousDelay: previous, wallClockNow: now, random: ConstantRandomSource(random))
    }

    private func delay(_ decision: RetryDecision, file: StaticString = #filePath, line: UInt = #line) -> TimeInterval? {
        guard case .retry(let delay, _, _) = decision else {
            XCTFail("expected a retry, got \(decision)", file: file, line: line)
            return nil
        }
        return delay
    }

    func testExponentialDelaysWithoutJitterDoubleUpToTheMaximum() {
        let policy = ExponentialBackoffRetryPolicy(maxAttempts: 10, baseDelay: 0.5, multiplier: 2, maxDelay: 5, jitter: .none, retryBudget: nil)
        let delays = (1...6).map { delay(policy.decide(context(.status(503, headers: [:]), attempt: $0))) }
        XCTAssertEqual(delays, [0.5, 1, 2, 4, 5, 5])
    }

    func testEachJitterModeUsesTheRandomSourceAsDocumented() {
        func policy(_ jitter: Jitter) -> ExponentialBackoffRetryPolicy {
            ExponentialBackoffRetryPolicy(maxAttempts: 10, baseDelay: 1, multiplier: 2, maxDelay: 100, jitter: jitter)
        }
        let random = ConstantRandomSource(0.25)
        // Attempt 3: the exponential delay is 1 × 2² = 4 s.
        XCTAssertEqual(policy(.none).backoff(afterAttempt: 3, previousDelay: nil, random: random), 4)
        XCTAssertEqual(policy(.full).backoff(afterAttempt: 3, previousDelay: nil, random: random), 1)
        XCTAssertEqual(policy(.equal).backoff(afterAttempt: 3, previousDelay: nil, random: random), 2.5)
        // Decorrelated: uniform between the base (1) and 3 × the previous delay (3 × 3 = 9).
        XCTAssertEqual(policy(.decorrelated).backoff(afterAttempt: 3, previousDelay: 3, random: random), 3)
        XCTAssertEqual(policy(.decorrelated).backoff(afterAttempt: 1, previousDelay: nil, random: random), 1.5)
    }

    func testDecorrelatedJitterNeverExceedsTheMaximum() {
        let policy = ExponentialBackoffRetryPolicy(baseDelay: 1, maxDelay: 10, jitter: .decorrelated)
        let random = SeededRandomSource(seed: 42)
        var previous: TimeInterval? = nil
        for attempt in 1...50 {
            let delay = policy.backoff(afterAttempt: attempt, previousDelay: previous, random: random)
            XCTAssert((1...10).contains(delay), "\(delay)")
            previous = delay
        }
    }

    func testRetryableMethods() {
        let policy = ExponentialBackoffRetryPolicy()
        for method in ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE", "get"] {
            XCTAssertNotNil(delay(policy.decide(context(.status(503, headers: [:]), method: method))), method)
        }
        for method in ["POST", "PATCH"] {
            let decision = policy.decide(context(.status(503, headers: [:]), method: method))
            XCTAssertEqual(decision, .stop(reason: "status 503; \(method) is not retried without an Idempotency-Key"))
        }
    }

    func testPostIsRetriedWithAnIdempotencyKeyOrWhenThePolicyOptsIn() {
        XCTAssertNotNil(delay(ExponentialBackoffRetryPolicy().decide(
            context(.status(503, headers: [:]), method: "POST", headers: ["idempotency-key": "abc"]))))
        XCTAssertNotNil(delay(ExponentialBackoffRetryPolicy(retryNonIdempotent: true).decide(
            context(.status(503, headers: [:]), method: "PATCH"))))
    }

    func testRetryableAndNonRetryableStatuses() {
        let policy = ExponentialBackoffRetryPolicy()
        for status in [408, 429, 500, 502, 503, 504] {
            XCTAssertNotNil(delay(policy.decide(context(.status(status, headers: [:])))), "\(status)")
        }
        for status in [400, 401, 403, 404, 409, 410, 422, 501, 505] {
            XCTAssertEqual(policy.decide(context(.status(status, headers: [:]))), .stop(reason: "status \(status) is not retryable"))
        }
    }

    func testRetryableAndNonRetryableTransportErrors() {
        let policy = ExponentialBackoffRetryPolicy()
        let retryable: [URLError.Code] = [.timedOut, .cannotFindHost, .cannotConnectToHost, .networkConnectionLost,
                                          .dnsLookupFailed, .notConnectedToInternet, .badServerResponse, .secureConnectionFailed]
        for code in retryable {
            XCTAssertNotNil(delay(policy.decide(context(.transport(code)))), "\(code)")
        }
        for code in [URLError.Code.badURL, .unsupportedURL, .cancelled, .userAuthenticationRequired] {
            guard case .stop(let reason) = policy.decide(context(.transport(code))) else { return XCTFail("\(code) retried") }
            XCTAssert(reason.hasSuffix("is not retryable"), reason)
        }
    }

    func testValidationFailuresAreNotRetriedButPreparationFailuresAre() {
        let policy = ExponentialBackoffRetryPolicy()
        XCTAssertEqual(policy.decide(context(.validation("content type"))), .stop(reason: "invalid response: content type is not retryable"))
        XCTAssertNotNil(delay(policy.decide(context(.preparation("signing failed")))))
    }

    func testAttemptsRunOut() {
        let policy = ExponentialBackoffRetryPolicy(maxAttempts: 3)
        XCTAssertNotNil(delay(policy.decide(context(.status(500, headers: [:]), attempt: 2))))
        XCTAssertEqual(policy.decide(context(.status(500, headers: [:]), attempt: 3)),
                       .stop(reason: "status 500; retries exhausted after 3 of 3 attempts"))
    }

    func testRetryAfterInSecondsIsHonouredAndMarkedAsTheServers() {
        let policy = ExponentialBackoffRetryPolicy(maxDelay: 30)
        let decision = policy.decide(context(.status(429, headers: ["retry-after": "7"])))
        XCTAssertEqual(decision, .retry(after: 7, reason: "status 429; attempt 1 of 3; Retry-After 7s", fromServer: true))
    }

    func testRetryAfterAsAnHTTPDate() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let header = RetryAfter.imfFixdate(now.addingTimeInterval(12))
        let decision = ExponentialBackoffRetryPolicy().decide(context(.status(503, headers: ["Retry-After": header]), now: now))
        XCTAssertEqual(delay(decision), 12)
    }

    /// Before: "Retry-After 120s capped to 10s", a retry the server had said it would refuse.
    func testARetryAfterLongerThanThePolicyAllowsEndsAtOnceNeverSooner() {
        let decision = ExponentialBackoffRetryPolicy(maxDelay: 10).decide(context(.status(503, headers: ["Retry-After": "120"])))
        XCTAssertEqual(decision, .stop(reason: "status 503; the server asked to wait 120s (Retry-After), longer than the 10s maximum delay; not retried sooner"))
        let budget = ExponentialBackoffRetryPolicy(maxDelay: 300, retryBudget: 60).decide(context(.status(429, headers: ["Retry-After": "120"])))
        XCTAssertEqual(budget, .stop(reason: "status 429; the server asked to wait 120s (Retry-After); the next retry would start after the 60s retry budget"))
        let within = ExponentialBackoffRetryPolicy(maxDelay: 300, retryBudget: nil).decide(context(.status(429, headers: ["Retry-After": "120"])))
        XCTAssertEqual(within, .retry(after: 120, reason: "status 429; attempt 1 of 3; Retry-After 120s", fromServer: true))
    }

    func testTheRetryBudgetStopsRetriesThatWouldStartTooLate() {
        let policy = ExponentialBackoffRetryPolicy(maxAttempts: 10, baseDelay: 4, jitter: .none, retryBudget: 10)
        XCTAssertEqual(delay(policy.decide(context(.status(503, headers: [:]), elapsed: 6))), 4)
        XCTAssertEqual(policy.decide(context(.status(503, headers: [:]), elapsed: 6.5)),
                       .stop(reason: "status 503; the next retry would start after the 10s retry budget"))
    }

    func testReasonsSayWhatHappenedAndWhy() {
        let decision = ExponentialBackoffRetryPolicy(baseDelay: 1, jitter: .equal).decide(context(.transport(.cannotConnectToHost), random: 0.5))
        XCTAssertEqual(decision.reason, "transport error -1004 (cannot connect to host); attempt 1 of 3; backoff 0.75s (equal jitter)")
    }
}

final class RetryAfterTests: XCTestCase {
    let now = Date(timeIntervalSince1970: 1_445_412_480) // Wed, 21 Oct 2015 07:28:00 GMT

    func testSeconds() {
        XCTAssertEqual(RetryAfter.delay(from: "120", now: now), 120)
        XCTAssertEqual(RetryAfter.delay(from: " 0 ", now: now), 0)
        XCTAssertNil(RetryAfter.delay(from: "-5", now: now))
        XCTAssertNil(RetryAfter.delay(from: "soon", now: now))
        // delay-seconds is 1*DIGIT; anything else that Double() would read is not a delay.
        for notDigits in ["1e3", "+5", "0x10", "inf", "nan", "1.5", "", " "] {
            XCTAssertNil(RetryAfter.delay(from: notDigits, now: now), notDigits)
        }
        XCTAssertEqual(RetryAfter.delay(from: "99999999999999999999999", now: now), 1e23)
    }

    func testTheThreeHTTPDateForms() {
        XCTAssertEqual(RetryAfter.delay(from: "Wed, 21 Oct 2015 07:28:30 GMT", now: now), 30)
        XCTAssertEqual(RetryAfter.delay(from: "Wednesday, 21-Oct-15 07:29:00 GMT", now: now), 60)
        XCTAssertEqual(RetryAfter.delay(from: "Wed Oct 21 07:28:10 2015", now: now), 10)
    }

    func testADateInThePastMeansNow() {
        XCTAssertEqual(RetryAfter.delay(from: "Wed, 21 Oct 2015 07:00:00 GMT", now: now), 0)
    }

    func testFormattingRoundTrips() {
        XCTAssertEqual(RetryAfter.imfFixdate(now), "Wed, 21 Oct 2015 07:28:00 GMT")
        XCTAssertEqual(RetryAfter.httpDate(RetryAfter.imfFixdate(now)), now)
    }
}
