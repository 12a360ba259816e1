import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Decides, after a failed attempt, whether to try again and after how long.
///
/// The default is ``ExponentialBackoffRetryPolicy``. Every decision carries a reason in
/// plain words; it goes into the `retryScheduled` or `finished` event as it is.
public protocol RetryPolicy: Sendable {
    func decide(_ context: RetryContext) -> RetryDecision
    /// The most attempts this policy allows, when it has a fixed limit (shown as "2/4").
    var attemptLimit: Int? { get }
    /// Its settings, for recordings (`replay --send` uses them again); nil for a policy
    /// that cannot be written down, which a re-send replaces with the default.
    var settings: RetrySettings? { get }
}

extension RetryPolicy {
    public var attemptLimit: Int? { nil }
    public var settings: RetrySettings? { nil }
}

/// What went wrong with one attempt.
public enum AttemptFailure: Sendable, Equatable {
    /// The task failed without a usable response (`URLError` code).
    case transport(URLError.Code)
    /// A response arrived with a status the validator does not accept.
    case status(Int, headers: [String: String])
    /// A response failed another validation check (content type, ...).
    case validation(String)
    /// Preparing the request threw.
    case preparation(String)

    /// A short description for reasons and errors.
    public var summary: String {
        switch self {
        case .transport(let code): "transport error \(code.rawValue) (\(TransportError.describe(code)))"
        case .status(let status, _): "status \(status)"
        case .validation(let reason): "invalid response: \(reason)"
        case .preparation(let reason): "preparation failed: \(reason)"
        }
    }
}

/// Everything a policy may look at to decide.
public struct RetryContext: Sendable {
    /// The request of the failed attempt.
    public var method: String
    public var headers: [String: String]
    /// The number of the attempt that just failed, from 1.
    public var attempt: Int
    public var failure: AttemptFailure
    /// Seconds since the first attempt started.
    public var elapsed: TimeInterval
    /// The delay chosen before this attempt, if it was a retry (for decorrelated jitter).
    public var previousDelay: TimeInterval?
    /// The wall-clock time now, to read `Retry-After` dates.
    public var wallClockNow: Date
    public var random: RandomSource

    public init(method: String, headers: [String: String] = [:], attempt: Int, failure: AttemptFailure,
                elapsed: TimeInterval = 0, previousDelay: TimeInterval? = nil, wallClockNow: Date = Date(),
                random: RandomSource = SystemRandomSource()) {
        self.method = method
        self.headers = headers
        self.attempt = attempt
        self.failure = failure
        self.elapsed = elapsed
        self.previousDelay = previousDelay
        self.wallClockNow = wallClockNow
        self.random = random
    }

    /// A header of the request, looked up without regard to case.
    public func header(_ name: String) -> String? {
        headers.value(forHTTPHeader: name)
    }
}

/// A policy's answer.
public enum RetryDecision: Sendable, Equatable {
    /// Try again after `delay` seconds. `fromServer` is true when the delay is the server's
    /// own `Retry-After`, which early retries then respect.
    case retry(after: TimeInterval, reason: String, fromServer: Bool)
    /// Give up.
    case stop(reason: String)

    public var reason: String {
        switch self {
        case .retry(_, let reason, _), .stop(let reason): reason
        }
    }
}

/// How random spread is added to a backoff delay.
public enum Jitter: String, Sendable, CaseIterable {
    /// The exact exponential delay.
    case none
    /// Anywhere from 0 to the exponential delay.
    case full
    /// Half the exponential delay, plus up to the other half at random.
    case equal
    /// Anywhere from the base delay to three times the previous delay ("decorrelated").
    case decorrelated
}

/// The default policy: exponential backoff with jitter, idempotency rules, `Retry-After`,
/// and a total retry-time budget.
///
/// A `Retry-After` is obeyed to the second: when it is longer than `maxDelay` or than what
/// is left of the retry budget, the operation ends at once with that reason, never with an
/// earlier retry.
///
/// Defaults: 3 attempts; 0.5 s base delay doubling up to 30 s; equal jitter; retries
/// GET, HEAD, OPTIONS, TRACE, PUT and DELETE (POST and PATCH only with
/// ``retryNonIdempotent`` or an `Idempotency-Key` header); statuses 408, 429, 500, 502,
/// 503 and 504; transport errors that a later attempt can cure; a 60 s retry budget.
public struct ExponentialBackoffRetryPolicy: RetryPolicy {
    public var maxAttempts: Int
    public var baseDelay: TimeInterval
    public var multiplier: Double
    public var maxDelay: TimeInterval
    public var jitter: Jitter
    /// Retry POST and PATCH (and any other method) even without an `Idempotency-Key`.
    public var retryNonIdempotent: Bool
    public var retryableMethods: Set<String>
    public var retryableStatusCodes: Set<Int>
    public var retryableErrorCodes: Set<URLError.Code>
    /// The most time, from the first attempt's start, within which a retry may begin;
    /// `nil` for no limit.
    public var retryBudget: TimeInterval?

    public var attemptLimit: Int? { maxAttempts }

    public static let defaultRetryableMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]
    public static let defaultRetryableStatusCodes: Set<Int> = [408, 429, 500, 502, 503, 504]
    public static let defaultRetryableErrorCodes: Set<URLError.Code> = [
        .timedOut, .cannotFindHost, .cannotConnectToHost, .networkConnectionLost, .dnsLookupFailed,
        .notConnectedToInternet, .badServerResponse, .secureConnectionFailed,
    ]

    public init(maxAttempts: Int = 3, baseDelay: TimeInterval = 0.5, multiplier: Double = 2, maxDelay: TimeInterval = 30,
                jitter: Jitter = .equal, retryNonIdempotent: Bool = false,
                retryableMethods: Set<String> = Self.defaultRetryableMethods,
                retryableStatusCodes: Set<Int> = Self.defaultRetryableStatusCodes,
                retryableErrorCodes: Set<URLError.Code> = Self.defaultRetryableErrorCodes,
                retryBudget: TimeInterval? = 60) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.jitter = jitter
        self.retryNonIdempotent = retryNonIdempotent
        self.retryableMethods = retryableMethods
        self.retryableStatusCodes = retryableStatusCodes
        self.retryableErrorCodes = retryableErrorCodes
        self.retryBudget = retryBudget
    }


    public func decide(_ context: RetryContext) -> RetryDecision {
        if let notRetryable = whyNotRetryable(context.failure) {
            return .stop(reason: notRetryable)
        }
        let method = context.method.uppercased()
        if !retryableMethods.contains(method), !retryNonIdempotent, context.header("Idempotency-Key") == nil {
            return .stop(reason: "\(context.failure.summary); \(method) is not retried without an Idempotency-Key")
        }
        if context.attempt >= maxAttempts {
            return .stop(reason: "\(context.failure.summary); retries exhausted after \(context.attempt) of \(maxAttempts) attempts")
        }

        var delay: TimeInterval
        var how: String
        var fromServer = false
        if case .status(_, let headers) = context.failure,
           let value = headers.value(forHTTPHeader: "Retry-After"),
           let serverDelay = RetryAfter.delay(from: value, now: context.wallClockNow) {
            // Never before the server's time: a retry sooner than it asked is one it told us
            // it would refuse, and it adds to the load that made it say so.
            guard serverDelay <= maxDelay else {
                return .stop(reason: "\(context.failure.summary); the server asked to wait \(DurationText.format(serverDelay)) (Retry-After), "
                    + "longer than the \(DurationText.format(maxDelay)) maximum delay; not retried sooner")
            }
            fromServer = true
            delay = serverDelay
            how = "Retry-After \(DurationText.format(delay))"
        } else {
            delay = backoff(afterAttempt: context.attempt, previousDelay: context.previousDelay, random: context.random)
            how = "backoff \(DurationText.format(delay))" + (jitter == .none ? "" : " (\(jitter.rawValue) jitter)")
        }
        delay = max(0, delay)

        if let retryBudget, context.elapsed + delay > retryBudget {
            let asked = fromServer ? " the server asked to wait \(DurationText.format(delay)) (Retry-After);" : ""
            return .stop(reason: "\(context.failure.summary);\(asked) the next retry would start after the \(DurationText.format(retryBudget)) retry budget")
        }
        return .retry(after: delay, reason: "\(context.failure.summary); attempt \(context.attempt) of \(maxAttempts); \(how)",
                      fromServer: fromServer)
    }

    /// Why a failure is never retried, or `nil` when it may be.
    private func whyNotRetryable(_ failure: AttemptFailure) -> String? {
        switch failure {
        case .transport(let code):
            retryableErrorCodes.contains(code) ? nil : "\(failure.summary) is not retryable"
        case .status(let status, _):
            retryableStatusCodes.contains(status) ? nil : "status \(status) is not retryable"
        case .validation:
            "\(failure.summary) is not retryable"
        case .preparation:
            nil
        }
    }

    /// The delay before the retry that follows attempt `attempt` (from 1), with jitter.
    public func backoff(afterAttempt attempt: Int, previousDelay: TimeInterval?, random: RandomSource) -> TimeInterval {
        let exponential = min(maxDelay, baseDelay * pow(multiplier, Double(max(0, attempt - 1))))
        switch jitter {
        case .none:
            return exponential
        case .full:
            return random.uniform(0, exponential)
        case .equal:
            return exponential / 2 + random.uniform(0, exponential / 2)
        case .decorrelated:
            let upper = max(baseDelay, (previousDelay ?? baseDelay) * 3)
            return min(maxDelay, random.uniform(baseDelay, upper))
        }
    }
}

extension RetryPolicy where Self == ExponentialBackoffRetryPolicy {
    /// Never retries.
    public static var never: ExponentialBackoffRetryPolicy { ExponentialBackoffRetryPolicy(maxAttempts: 1) }
}
