import Foundation

/// The one place an operation decides, after a failed attempt, whether to try again: the
/// retry policy's word, held to the operation's deadline, then the host's retry budget.
/// A value with no lock and no clock of its own, so every combination is tested without a
/// transport (RetryJudgeTests); the operation performs what the verdict says (publish,
/// schedule, end).
struct RetryJudge {
    let policy: RetryPolicy
    let budget: RetryBudget?
    /// The operation's deadline, seconds from its start; nil: none.
    let deadline: TimeInterval?

    /// What is known when an attempt failed.
    struct Input {
        var failure: AttemptFailure
        /// False for a request that cannot be sent as it is (it would fail the same way every time).
        var retryable = true
        /// What the policy is asked with.
        var context: RetryContext
        /// The attempt that failed (1 for the first), counting requeues.
        var attempt: Int
        var now: TimeInterval
        /// When the operation started; the deadline counts from it.
        var startedAt: TimeInterval?
        /// `host:port` the retry would go to, for the budget.
        var host: String?
        /// What the transport or the engine said of a failure to get an answer: its words
        /// (which timeout, which limit) go into the error the caller gets.
        var taskError: TransportError? = nil
        /// Part of the answer's body had gone to the caller's stream: going again would hand
        /// it the same bytes twice.
        var handedOver = false
    }

    struct Verdict: Equatable {
        enum Next: Equatable {
            /// Try again at `now + delay`.
            case retry(delay: TimeInterval, reason: String, fromServer: Bool)
            /// End the operation with `error`; `reason` is the `finished` event's.
            case stop(reason: String, error: RequestError.Reason)
        }

        var next: Next
        /// The host whose budget was asked (its balance is published as `retryBudget`).
        var askedBudget: String?
        /// Why the budget refused (the `retryDenied` event's reason).
        var budgetRefusal: String?

        /// The words the attempt's record keeps as its decision.
        var reason: String {
            switch next {
            case .retry(_, let reason, _), .stop(let reason, _): reason
            }
        }
    }

    func judge(_ input: Input) -> Verdict {
        var verdict = decide(input)
        // The `finished` event's reason in the words the attempt was ended with (`read
        // timeout …`, the file's limit, the decompression ratio), not the code's general
        // ones ("transport error -1001 (timed out)"). A retry's reason keeps the general
        // words: the same story on every transport.
        if case .transport(let code) = input.failure, let said = input.taskError, said.code == code.rawValue,
           said.message != TransportError.describe(code), case .stop(let reason, let error) = verdict.next {
            verdict.next = .stop(reason: reason.replacingOccurrences(of: input.failure.summary, with: "transport error \(said.code) (\(said.message))"),
                                 error: error)
        }
        return verdict
    }

    private func decide(_ input: Input) -> Verdict {
        let failure = input.failure
        var last = RequestError.Reason(failure)
        if case .transport(let code) = failure, let said = input.taskError, said.code == code.rawValue { last = .transport(said) }
        let exhausted = input.attempt > 1 ? RequestError.Reason.retriesExhausted(attempts: input.attempt, last: last) : last
        if input.handedOver {
            return Verdict(next: .stop(reason: "\(failure.summary); not retried: its body had begun reaching the caller's stream", error: exhausted))
        }
        guard input.retryable else {
            return Verdict(next: .stop(reason: "\(failure.summary); not retried: the request itself cannot be sent", error: exhausted))
        }
        let decision = policy.decide(input.context)
        guard case .retry(let delay, let reason, let fromServer) = decision else {
            return Verdict(next: .stop(reason: decision.reason, error: exhausted))
        }
        if let deadline, let startedAt = input.startedAt, input.now + delay >= startedAt + deadline {
            let asked = fromServer ? " the server asked to wait \(DurationText.format(delay)) (Retry-After);" : ""
            return Verdict(next: .stop(reason: "\(failure.summary);\(asked) the next retry would start after the \(DurationText.format(deadline)) deadline",
                                       error: exhausted))
        }
        guard let budget, let host = input.host else {
            return Verdict(next: .retry(delay: delay, reason: reason, fromServer: fromServer))
        }
        if let refusal = budget.spendRetry(on: host) {
            return Verdict(next: .stop(reason: "\(failure.summary); \(refusal)", error: .retryDenied(budget: refusal, last: last)),
                           askedBudget: host, budgetRefusal: refusal)
        }
        return Verdict(next: .retry(delay: delay, reason: reason, fromServer: fromServer), askedBudget: host)
    }
}
