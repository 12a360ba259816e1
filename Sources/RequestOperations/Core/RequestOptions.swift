import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How one request operation behaves: each stage's override point, with its default.
public struct RequestOptions: Sendable {
    /// Decides whether and when to retry. Default: ``ExponentialBackoffRetryPolicy``.
    public var retryPolicy: RetryPolicy
    /// Checks the response when it arrives. Default: status 200..<300.
    public var validator: ResponseValidator
    /// Cancel the task as soon as the response fails validation, instead of reading its
    /// body (which is kept for inspection by default).
    public var cancelOnInvalidResponse: Bool
    /// Makes the request ready for each attempt (sign it, add a header); may be slow, may
    /// fail. Default: sends the request as it is.
    public var preparer: RequestPreparer?
    /// The most one attempt may take before it fails with "timed out" (`URLError.timedOut`,
    /// which the retry policy may retry). Enforced by the operation itself, to the
    /// millisecond; URLSession's own timeout on Linux is whole seconds of idleness. Each
    /// attempt's request carries an idle timeout a second past this and the deadline (a
    /// request's own `timeoutInterval` is replaced), so the transport never cuts it first.
    public var attemptTimeout: TimeInterval?
    /// The most the whole operation may take, all attempts and waits included. On Linux
    /// `timeoutIntervalForResource` is not enforced, and some responses can hang a task
    /// forever, so every operation has one. Default 300 s.
    public var deadline: TimeInterval?
    /// Retry early when another request to the same host succeeds.
    public var earlyRetryOnHostSuccess: Bool
    /// After a failure to connect, probe the host and retry early when it answers.
    public var earlyRetryOnProbe: Bool
    /// Called when the server asks for credentials. Default: no credentials (the 401 is
    /// then the response), which does not hang on Linux as default handling can.
    public var challengeHandler: (@Sendable (URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?))?
    /// Adapt each attempt's request before it takes a slot, in order; may hold it in a
    /// batch, discard it or fail it. Default: none.
    public var interceptors: [RequestInterceptor]
    /// Act on results once for many operations (a token refresh after 401s). Default: none.
    public var reactors: [RequestReactor]
    /// Hedged reads: send an idempotent request again when it has had no response for a
    /// while, first response wins (``HedgePolicy``). Default: off.
    public var hedge: HedgePolicy?
    /// Kept on each operation for the caller: the plan's name for it, a tag, ...
    public var userInfo: [String: String]
    /// Who asked for this request, for people, when it is not the program itself: a proxy's
    /// client (`curl (pid 4242)`). In the `queued` event's `origin` (added), and the monitor's
    /// PROGRAM column. nil: the program that runs the queue.
    public var origin: String?
    /// The HTTP version the request came in over, when it is a proxy's client's (`HTTP/1.1`,
    /// `HTTP/2.0`): the `queued` event's `clientHTTPVersion` (added), beside the version the
    /// upstream answered in (`response`'s `httpVersion`). nil: the program's own request.
    public var clientHTTPVersion: String?
    /// The request's fields are a client's, and what goes back to it is passed on as it came
    /// (a proxy's): its fields are shown as written (a `headerFields` event beside `queued`'s
    /// one value per name), and the answer's fields and trailers are kept as the server wrote
    /// them. Every request's fields go in their order on a transport that writes its own
    /// heads (NIO's); URLSession's keeps one value per name.
    public var relaysFieldsAsWritten = false
    /// How many redirects an attempt follows (10), and whether https may go to http (no).
    public var redirects: RedirectPolicy = .follow()
    /// Every answer is passed on as it came, whatever its status (a transparent proxy's): no
    /// status makes the response invalid, and an operation whose answer is not 2xx ends
    /// ``RequestOutcome/relayed``, neither a success nor a failure.
    public var relaysEveryAnswer = false
    /// How much of each attempt's response body the `responseBody` event carries (bytes;
    /// 64 KiB by default, 0: none), so the monitor, recordings and HAR show what was said.
    public var responseBodyCap: Int = RequestOptions.defaultResponseBodyCap
    /// ``responseBodyCap``'s default.
    public static let defaultResponseBodyCap = 64 * 1024
    /// Where a successful (2xx) answer's body is written as it arrives, instead of memory:
    /// under a temporary name, moved into place only when the attempt succeeded (a failed or
    /// retried attempt leaves nothing under this name). The result's `data` is then empty
    /// and its ``RequestResult/file`` names the file. Other answers (an error page) stay in memory.
    /// What is under the name must be a regular file (replaced) or nothing: anything else (a
    /// device, a link, a folder) ends the attempt by name (``checkDestination(_:)``).
    public var destination: URL?
    /// A file sent as the request's body, read in parts as the connection takes them (never
    /// whole into memory); it replaces the request's own body. Each attempt reads it from its
    /// start, as does a 307/308 on a transport that re-sends bodies (NIO; URLSession's
    /// FoundationNetworking cannot, and such a redirect ends the attempt with -1021). A file
    /// that is missing, a folder or not a regular file fails the operation, not retried.
    public var bodyFile: URL?
    /// The most an answer's body may hold in memory; past it the attempt ends with -1103
    /// (`dataLengthExceedsMaximum`), so no server can make the process run out of memory.
    /// A ``destination`` file has no limit. nil: none.
    public var maxResponseBytes: Int? = RequestOptions.defaultMaxResponseBytes
    /// The most a ``destination`` file may receive; past it the attempt ends with -1103 and
    /// nothing is left under the file's name. nil (the default): no limit — a report or an
    /// image may well be gigabytes, and a disk is not the process's memory. Set it when the
    /// server is not trusted with the disk (`"maxFileBytes"` beside `"saveTo"` in a plan).
    public var maxFileBytes: Int?
    /// Seconds an attempt may go without a byte from the server (from the request's start,
    /// then between the response and each part of its body); past them it ends with -1001
    /// and `timeout: read`. A healthy long download is never cut by it, only a stalled one.
    /// 60 s by default (URLSession's own idle timeout); nil: none.
    public var readTimeout: TimeInterval? = RequestOptions.defaultReadTimeout
    /// ``readTimeout``'s default.
    public static let defaultReadTimeout: TimeInterval = 60
    /// An answer sent with a `Content-Encoding` (gzip, deflate) may decode to at most this
    /// many times its `Content-Length` on the wire; past it (and past 1 MiB) the attempt ends
    /// with -1103 — a decompression bomb fills neither the memory nor a ``destination``'s disk.
    /// 200 by default: text and JSON compress 3–20×, gzip's most is about 1,030×. An encoded
    /// answer without a `Content-Length` is judged by the transport: the NIO transport's
    /// decoder counts the wire as it reads (``RequestOptions/defaultMaxDecodedRatio`` unless
    /// made otherwise); FoundationNetworking does not tell the wire size, so on the URLSession
    /// transport such an answer is held only by ``maxResponseBytes`` in memory and is
    /// unlimited to a file. nil: no limit.
    public var maxDecodedRatio: Int? = RequestOptions.defaultMaxDecodedRatio
    /// Where a valid answer's body goes instead of memory: set by
    /// ``RequestQueue/stream(for:id:options:bufferSize:)`` and ``RequestQueue/stream(for:id:options:to:)``.
    var bodyStream: (any StreamedAnswerSink)?
    /// ``maxDecodedRatio``'s default.
    public static let defaultMaxDecodedRatio = 200
    /// ``maxResponseBytes``'s default: 64 MiB.
    public static let defaultMaxResponseBytes = 64 << 20

    public init(retryPolicy: RetryPolicy = ExponentialBackoffRetryPolicy(),
                validator: ResponseValidator = StandardResponseValidator(),
                cancelOnInvalidResponse: Bool = false,
                preparer: RequestPreparer? = nil,
                attemptTimeout: TimeInterval? = nil,
                deadline: TimeInterval? = 300,
                earlyRetryOnHostSuccess: Bool = true,
                earlyRetryOnProbe: Bool = true,
                challengeHandler: (@Sendable (URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?))? = nil,
                interceptors: [RequestInterceptor] = [],
                reactors: [RequestReactor] = [],
                hedge: HedgePolicy? = nil,
                userInfo: [String: String] = [:]) {
        self.hedge = hedge
        self.interceptors = interceptors
        self.reactors = reactors
        self.retryPolicy = retryPolicy
        self.validator = validator
        self.cancelOnInvalidResponse = cancelOnInvalidResponse
        self.preparer = preparer
        self.attemptTimeout = attemptTimeout
        self.deadline = deadline
        self.earlyRetryOnHostSuccess = earlyRetryOnHostSuccess
        self.earlyRetryOnProbe = earlyRetryOnProbe
        self.challengeHandler = challengeHandler
        self.userInfo = userInfo
    }
}

/// Makes a request ready to send, once per attempt.
public protocol RequestPreparer: Sendable {
    /// The request to send for attempt `attempt` (from 1). Throwing fails the attempt; the
    /// retry policy then decides.
    func prepare(_ request: URLRequest, attempt: Int) async throws -> URLRequest
}

/// A preparer from a synchronous closure, run on a dispatch queue the caller names (for
/// work that must stay on one queue, or that blocks).
public struct QueuePreparer: RequestPreparer {
    public let queue: DispatchQueue
    public let body: @Sendable (URLRequest, Int) throws -> URLRequest

    public init(queue: DispatchQueue, _ body: @escaping @Sendable (URLRequest, Int) throws -> URLRequest) {
        self.queue = queue
        self.body = body
    }

    public func prepare(_ request: URLRequest, attempt: Int) async throws -> URLRequest {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try body(request, attempt) })
            }
        }
    }
}

/// A preparer from an async closure.
public struct ClosurePreparer: RequestPreparer {
    public let body: @Sendable (URLRequest, Int) async throws -> URLRequest

    public init(_ body: @escaping @Sendable (URLRequest, Int) async throws -> URLRequest) {
        self.body = body
    }

    public func prepare(_ request: URLRequest, attempt: Int) async throws -> URLRequest {
        try await body(request, attempt)
    }
}
