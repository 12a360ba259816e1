import Foundation
import HTTPTypes

/// Where an operation is in its life. `waitingToRetry` carries the clock time at which
/// the next attempt starts, for countdowns.
public enum RequestPhase: Sendable, Equatable {
    /// Created; not started by its queue yet.
    case pending
    /// Started, waiting for a concurrency slot.
    case waitingForSlot
    /// Waiting for a reactor that holds new requests (a token refresh) to finish.
    case waitingForReactor(String)
    /// Running the interceptor chain of the current attempt.
    case intercepting
    /// Held by an interceptor in the named batch until the batch is released.
    case held(batch: String)
    /// Waiting, without a slot, for the host's circuit breaker to let an attempt through.
    case waitingForCircuit(host: String)
    /// Waiting, without a slot, until the host's rate-limit pause ends (clock time).
    case waitingForRateLimit(host: String, until: TimeInterval)
    /// Preparing the request of the current attempt.
    case preparing
    /// Stopped before its attempt is sent, at a breakpoint (its number), without a slot,
    /// until a person resolves it (``RequestOperation/resolveBreakpoint(_:by:)``).
    case stoppedAtBreakpoint(Int)
    /// The task is running.
    case inFlight
    case waitingToRetry(until: TimeInterval)
    case finished(RequestOutcome)
}

/// What `response(for:)` and `value(_:for:)` throw when an operation fails, or is cancelled
/// by anything but the calling Task: why (``reason``, ``stage``) and everything the
/// operation did (``result``: its attempts, their statuses and timings, the last body).
public struct RequestError: Error, Sendable, CustomStringConvertible {
    public var reason: Reason
    public var result: RequestResult

    public init(reason: Reason, result: RequestResult) {
        self.reason = reason
        self.result = result
    }

    /// Which stage failed: what a caller switches on to decide what to tell a person.
    public var stage: RequestErrorStage { reason.stage }
    public var description: String { reason.description }
}

extension RequestError {
/// Why an operation failed: the stage, and the detail. Interceptors and reactors throw
/// these to say which stage they fail as.
public indirect enum Reason: Error, Sendable, Equatable, CustomStringConvertible {
    case transport(TransportError)
    case status(Int)
    case validation(String)
    case preparation(String)
    /// The body did not parse into the operation's typed result.
    case decoding(String)
    /// An interceptor threw while adapting the request.
    case interceptor(name: String, message: String)
    /// A reactor (a token refresh, say) failed, timed out or ran too often.
    case reactor(name: String, message: String)
    /// `by` is who: `caller`, `cancelAll`, `dependency` (a parent failed), an interceptor that discarded it, ...
    case cancelled(by: String)
    case deadlineExceeded(TimeInterval)
    /// Retries ran out; `last` is the final attempt's failure.
    case retriesExhausted(attempts: Int, last: Reason)
    /// The retry policy wanted another attempt and the host's retry budget refused it;
    /// `last` is the final attempt's failure.
    case retryDenied(budget: String, last: Reason)
    /// The host's circuit breaker is open and fails fast (``HostCircuitBreaker/Options/failFast``).
    case circuitOpen(host: String, reason: String)

    init(_ failure: AttemptFailure) {
        switch failure {
        case .transport(let code): self = .transport(TransportError(code: code.rawValue, message: TransportError.describe(code)))
        case .status(let status, _): self = .status(status)
        case .validation(let reason): self = .validation(reason)
        case .preparation(let reason): self = .preparation(reason)
        }
    }

    public var description: String {
        switch self {
        case .transport(let error): "transport error \(error.code) (\(error.message))"
        case .status(let status): "status \(status)"
        case .validation(let reason): "invalid response: \(reason)"
        case .preparation(let reason): "preparation failed: \(reason)"
        case .decoding(let reason): "cannot decode the response: \(reason)"
        case .interceptor(let name, let message): "interceptor \(name) failed: \(message)"
        case .reactor(let name, let message): "\(name) failed: \(message)"
        case .cancelled(let by): "cancelled by \(by)"
        case .deadlineExceeded(let seconds): "deadline of \(DurationText.format(seconds)) exceeded"
        case .retriesExhausted(let attempts, let last): "\(last) after \(attempts) attempts"
        case .retryDenied(let budget, let last): "\(last); \(budget)"
        case .circuitOpen(_, let reason): reason
        }
    }
}

}

/// The stage of a request's flow that an error came from.
public enum RequestErrorStage: String, Sendable, Equatable {
    case transport, status, validation, preparation, decoding, interceptor, reactor, cancelled, retriesExhausted, deadline
    case retryBudget
    case circuitBreaker
}

extension RequestError.Reason {
    /// Which stage failed.
    public var stage: RequestErrorStage {
        switch self {
        case .transport: .transport
        case .status: .status
        case .validation: .validation
        case .preparation: .preparation
        case .decoding: .decoding
        case .interceptor: .interceptor
        case .reactor: .reactor
        case .cancelled: .cancelled
        case .deadlineExceeded: .deadline
        case .retriesExhausted: .retriesExhausted
        case .retryDenied: .retryBudget
        case .circuitOpen: .circuitBreaker
        }
    }
}

/// The timings and outcome of one attempt, in the clock's seconds.
///
/// On Linux URLSession never delivers task metrics, so the operation records these itself.
public struct AttemptRecord: Sendable, Equatable {
    public var number: Int
    /// When the attempt asked for a concurrency slot.
    public var queuedAt: TimeInterval
    /// When it got one and began preparing its request.
    public var startedAt: TimeInterval?
    /// When its task was resumed.
    public var sentAt: TimeInterval?
    /// When the transport had written the whole request (nil when it cannot tell).
    public var requestSentAt: TimeInterval?
    public var responseAt: TimeInterval?
    public var firstByteAt: TimeInterval?
    public var endedAt: TimeInterval?
    public var status: Int?
    public var bytes: Int = 0
    public var failure: AttemptFailure?
    /// The wait chosen after this attempt, and why (or why not).
    public var retryDelay: TimeInterval?
    public var decision: String?

    public init(number: Int, queuedAt: TimeInterval) {
        self.number = number
        self.queuedAt = queuedAt
    }
}

/// What an operation produced.
public struct RequestResult: Sendable {
    public var outcome: RequestOutcome
    /// The last response's status, if any.
    public var status: Int?
    public var headers: [String: String]
    /// Each value of a header the last response sent more than once, in order (``headers``
    /// joins them with ", "); empty when none was, or the transport does not tell.
    public var repeatedHeaders: [String: [String]] = [:]
    /// The last response's body.
    public var data: Data
    public var error: RequestError.Reason?
    public var attempts: [AttemptRecord]
    /// Seconds from the first attempt's start (or from the operation's start) to the end.
    public var duration: TimeInterval
    /// Where the body was saved (``RequestOptions/destination``); `data` is then empty.
    public var file: URL? = nil
    /// The fields that came after the answer's body (gRPC's `grpc-status`), from a transport
    /// that reads them and a request that wants them (``TransportCallbacks/wantsTrailers``).
    public var trailers: HTTPFields? = nil
    /// The answer's fields as received — in order, each repeat apart, names as the server
    /// spelled them — from a transport that keeps them, for requests that ask
    /// (``RequestOptions/relaysFieldsAsWritten``: a proxy's, which passes a failed answer on as it came).
    public var fields: HTTPFields? = nil

    public var isSuccess: Bool { outcome == .success }
}
