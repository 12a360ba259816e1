import Foundation
@testable import RequestOperations
import XCTest

/// The retry decision in its one place, without a transport: the policy's word, the
/// deadline's cap, the budget's refusal, and which error and reason each leaves.
final class RetryJudgeTests: XCTestCase {
    private let status503 = AttemptFailure.status(503, headers: [:])
    private var last: RequestError.Reason { RequestError.Reason(status503) }
    private let policy = ExponentialBackoffRetryPolicy(maxAttempts: 3, baseDelay: 1, multiplier: 2, jitter: .none)

    private func input(attempt: Int = 1, failure: AttemptFailure? = nil, method: String = "GET", now: TimeInterval = 100,
                       startedAt: TimeInterval? = 100, host: String? = "api:443", retryable: Bool = true,
                       headers: [String: String] = [:]) -> RetryJudge.Input {
        let failure = failure ?? status503
        return RetryJudge.Input(failure: failure, retryable: retryable,
                                context: RetryContext(method: method, headers: headers, attempt: attempt, failure: failure, elapsed: 0,
                                                      previousDelay: nil, wallClockNow: Date(), random: SeededRandomSource(seed: 1)),
                                attempt: attempt, now: now, startedAt: startedAt, host: host)
    }

    func testThePolicysRetryStandsWithoutDeadlineOrBudget() {
        let verdict = RetryJudge(policy: policy, budget: nil, deadline: nil).judge(input())
        XCTAssertEqual(verdict.next, .retry(delay: 1, reason: verdict.reason, fromServer: false))
        XCTAssertNil(verdict.askedBudget)
        XCTAssertNil(verdict.budgetRefusal)
    }

    func testThePolicysStopEndsWithTheLastFailureOrRetriesExhausted() {
        let judge = RetryJudge(policy: policy, budget: nil, deadline: nil)
        let first = judge.judge(input(attempt: 1, method: "POST"))
        XCTAssertEqual(first.next, .stop(reason: "status 503; POST is not retried without an Idempotency-Key", error: last))
        let third = judge.judge(input(attempt: 3))
        XCTAssertEqual(third.next, .stop(reason: "status 503; retries exhausted after 3 of 3 attempts",
                                         error: .retriesExhausted(attempts: 3, last: last)))
    }

    func testARequestThatCannotBeSentIsNeverRetriedNorChargedToTheBudget() {
        let clock = ManualClock()
        let budget = RatioRetryBudget(options: .init(percent: 0, window: 10, minRetriesPerSecond: 0), clock: clock)
        let verdict = RetryJudge(policy: policy, budget: budget, deadline: nil).judge(input(failure: .preparation("bad header"), retryable: false))
        guard case .stop(let reason, let error) = verdict.next else { return XCTFail("\(verdict)") }
        XCTAssert(reason.hasSuffix("not retried: the request itself cannot be sent"), reason)
        XCTAssertEqual(error, RequestError.Reason(.preparation("bad header")))
        XCTAssertNil(verdict.askedBudget, "the budget is asked only for a retry that would happen")
    }

    func testTheDeadlineCapsARetryThatWouldStartAfterIt() {
        let judge = RetryJudge(policy: policy, budget: nil, deadline: 10)
        guard case .retry(1, _, false) = judge.judge(input(now: 108.5, startedAt: 100)).next else {
            return XCTFail("1 s from 108.5 is before the deadline at 110")
        }
        let capped = judge.judge(input(now: 109, startedAt: 100))
        XCTAssertEqual(capped.next, .stop(reason: "status 503; the next retry would start after the 10s deadline", error: last))
        // The server's Retry-After is named when it is what the deadline cuts.
        let asked = AttemptFailure.status(503, headers: ["Retry-After": "5"])
        guard case .retry(5, _, true) = judge.judge(input(failure: asked, now: 100, startedAt: 100)).next else {
            return XCTFail("5 s from the start is within 10")
        }
        XCTAssertEqual(judge.judge(input(failure: asked, now: 106, startedAt: 100)).next,
                       .stop(reason: "status 503; the server asked to wait 5s (Retry-After); the next retry would start after the 10s deadline",
                             error: RequestError.Reason(asked)))
    }

    func testTheBudgetIsAskedLastAndItsRefusalIsNamed() {
        let clock = ManualClock()
        let budget = RatioRetryBudget(options: .init(percent: 0, window: 10, minRetriesPerSecond: 0), clock: clock)
        let judge = RetryJudge(policy: policy, budget: budget, deadline: 10)
        let denied = judge.judge(input())
        XCTAssertEqual(denied.askedBudget, "api:443")
        let refusal = try? XCTUnwrap(denied.budgetRefusal)
        XCTAssertEqual(denied.next, .stop(reason: "status 503; \(refusal ?? "")", error: .retryDenied(budget: refusal ?? "", last: last)))
        // A retry the deadline stops never spends the budget.
        let roomy = RatioRetryBudget(options: .init(percent: 1, window: 10, minRetriesPerSecond: 0), clock: clock)
        roomy.requestSent(to: "api:443")
        let late = RetryJudge(policy: policy, budget: roomy, deadline: 10).judge(input(now: 109.5, startedAt: 100))
        XCTAssertNil(late.askedBudget)
        XCTAssertEqual(roomy.retriesLeft(on: "api:443"), 1, "nothing was spent")
        let allowed = RetryJudge(policy: policy, budget: roomy, deadline: 10).judge(input())
        XCTAssertEqual(allowed.askedBudget, "api:443")
        XCTAssertNil(allowed.budgetRefusal)
        guard case .retry = allowed.next else { return XCTFail("\(allowed)") }
        XCTAssertEqual(roomy.retriesLeft(on: "api:443"), 0, "the retry was counted")
        XCTAssertNil(RetryJudge(policy: policy, budget: budget, deadline: nil).judge(input(host: nil)).askedBudget,
                     "no host, no budget to ask")
    }

    func testTheTransportsWordsForAFailureGoIntoTheCallersError() {
        let cut = AttemptFailure.transport(.dataLengthExceedsMaximum)
        var asked = input(failure: cut)
        asked.taskError = TransportError(code: URLError.Code.dataLengthExceedsMaximum.rawValue, message: "grew past 200× (a decompression bomb?)")
        let verdict = RetryJudge(policy: .never, budget: nil, deadline: nil).judge(asked)
        guard case .stop(_, .transport(let error)) = verdict.next else { return XCTFail("\(verdict)") }
        XCTAssertEqual(error.message, "grew past 200× (a decompression bomb?)")
        // Words for another code than the attempt failed with are not taken for it.
        asked.taskError = TransportError(code: URLError.Code.timedOut.rawValue, message: "timed out")
        let other = RetryJudge(policy: .never, budget: nil, deadline: nil).judge(asked)
        XCTAssertEqual(other.next, .stop(reason: other.reason, error: RequestError.Reason(cut)))
    }
}
