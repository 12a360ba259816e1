import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request's body as the `queued` (and `built`) event carries it, so that a recording can
/// show it and `replay --send` can send it again.
///
/// Bodies up to ``EventHub/bodyLimit`` bytes (64 KiB by default) ride whole; a larger one, or
/// a body that is a stream (read once, by the transport), is named with its size and why it
/// was left out.
public enum RecordedBody: Sendable, Equatable {
    /// The whole body.
    case bytes(Data)
    /// Not carried: its size when known, and why (`over the 65536-byte limit`, `a stream`).
    case omitted(bytes: Int?, reason: String)

    /// The body of `request`, whole when it is at most `limit` bytes.
    public init?(of request: URLRequest, limit: Int) {
        self.init(of: RequestMessage.body(of: request), limit: limit)
    }

    /// The body of `request`, whole when it is at most `limit` bytes.
    public init?(of request: RequestMessage, limit: Int) {
        self.init(of: request.body, limit: limit)
    }

    private init?(of body: RequestBody, limit: Int) {
        switch body {
        case .none: return nil
        case .data(let data): self.init(data, limit: limit)
        case .stream: self = .omitted(bytes: nil, reason: "a stream")
        }
    }

    /// `data` whole when it is at most `limit` bytes, else named by its size; nil when empty.
    public init?(_ data: Data, limit: Int) {
        guard !data.isEmpty else { return nil }
        self = data.count <= limit ? .bytes(data) : .omitted(bytes: data.count, reason: "over the \(limit)-byte limit")
    }
}

/// The options of a request that can be written down and used again: its time limits and
/// its retry settings. Code (validators, interceptors, reactors, preparers) cannot be, so a
/// re-sent request runs with the re-sending program's own.
public struct RecordedOptions: Sendable, Equatable {
    /// ``RequestOptions/attemptTimeout`` (`timeout`).
    public var attemptTimeout: TimeInterval?
    /// ``RequestOptions/deadline`` (`deadline`).
    public var deadline: TimeInterval?
    /// The retry policy's settings; nil when the policy cannot describe itself (a custom one).
    public var retry: RetrySettings?
    /// ``RequestOptions/earlyRetryOnHostSuccess`` and ``RequestOptions/earlyRetryOnProbe``
    /// (`earlyRetry`, written only when they are off).
    public var earlyRetry: Bool
    /// ``RequestOptions/hedge`` (`hedgeAfter`, `hedgeMax`; absent: no hedging).
    public var hedge: HedgePolicy?
    /// ``RequestOptions/destination`` (`saveTo`, added) and ``RequestOptions/bodyFile``
    /// (`bodyFile`, added): the files an answer goes to and a body comes from.
    public var saveTo: String?
    public var bodyFile: String?
    /// The ids of the operations this one ran after (`parents`, added: the ids
    /// percent-encoded and joined by `,`; absent when none), so a re-run can wait for the
    /// same ones. Empty: none.
    public var parents: [String] = []
    /// ``RequestOptions/origin`` (`origin`, added): who asked for the request, when it was not
    /// the program itself (a proxy's client).
    public var origin: String?
    /// ``RequestOptions/redirects``' count (`maxRedirects`, added: written when it is not the
    /// default 10; a proxy's transparent requests follow none, the client does). Nil: not
    /// recorded, the default.
    public var maxRedirects: Int?
    /// ``RequestOptions/relaysEveryAnswer`` (`relaysEveryAnswer`, added: written only when
    /// true): every answer was passed on as it came, a 404 `relayed`, not failed.
    public var relaysEveryAnswer = false
    /// ``RequestOptions/clientHTTPVersion`` (`clientHTTPVersion`, added: written only for a
    /// proxy's client's request): the version the client spoke to the proxy.
    public var clientHTTPVersion: String?
    /// `refusedByProxy` (added: written only when true): a proxy answered the request itself
    /// (a `407`, a `400` for a request it could not read, a `508` loop) and sent nothing on.
    /// Such a row is not a request that reached a server: `reqtop whatif` and `replay --send`
    /// leave it out, as they do a tunnel's.
    public var refusedByProxy = false

    public init(attemptTimeout: TimeInterval? = nil, deadline: TimeInterval? = nil, retry: RetrySettings? = nil, earlyRetry: Bool = true,
                hedge: HedgePolicy? = nil) {
        self.hedge = hedge
        self.attemptTimeout = attemptTimeout
        self.deadline = deadline
        self.retry = retry
        self.earlyRetry = earlyRetry
    }

    public init(_ options: borrowing RequestOptions) {
        // Borrowed: an operation records its options at its start, and taking them owned
        // copied them whole (#58).
        // (Read into constants first: `||` takes its right side in a closure, which would
        // capture the borrowed options.)
        let hedge = options.hedge, onHostSuccess = options.earlyRetryOnHostSuccess, onProbe = options.earlyRetryOnProbe
        self.init(attemptTimeout: options.attemptTimeout, deadline: options.deadline,
                  retry: options.retryPolicy.settings, earlyRetry: onHostSuccess || onProbe, hedge: hedge)
        saveTo = options.destination?.path
        bodyFile = options.bodyFile?.path
        origin = options.origin
        if options.redirects.max != RedirectPolicy.follow().max { maxRedirects = options.redirects.max }
        relaysEveryAnswer = options.relaysEveryAnswer
        clientHTTPVersion = options.clientHTTPVersion
    }

    /// A client's own exchange, as a HAR from a browser or another proxy holds it: one attempt,
    /// no redirect followed (each hop is an entry of its own), no deadline.
    public static let clientExchange: RecordedOptions = {
        var options = RecordedOptions(retry: ExponentialBackoffRetryPolicy.never.settings, earlyRetry: false)
        options.maxRedirects = 0
        return options
    }()

    /// The ``RequestOptions`` these stand for, over `base` (what a recording cannot hold —
    /// code, caps — is `base`'s); nil `retry` keeps `base`'s policy.
    public func applied(to base: RequestOptions) -> RequestOptions {
        var options = base
        options.attemptTimeout = attemptTimeout
        options.deadline = deadline
        options.earlyRetryOnHostSuccess = earlyRetry
        options.earlyRetryOnProbe = earlyRetry
        options.hedge = hedge
        if let retry { options.retryPolicy = ExponentialBackoffRetryPolicy(retry) }
        if let maxRedirects { options.redirects.max = maxRedirects }
        options.relaysEveryAnswer = relaysEveryAnswer
        return options
    }

    /// `options`, and the operations it runs after.
    public init(_ options: borrowing RequestOptions, parents: [String]) {
        self.init(options)
        self.parents = parents
    }
}

/// The settings of an ``ExponentialBackoffRetryPolicy`` that a plan can give, recorded with
/// each request (`maxAttempts`, `retryBaseDelay`, `retryMultiplier`, `retryMaxDelay`,
/// `retryJitter`, `retryNonIdempotent`, `retryBudget`). The retryable methods, statuses and
/// errors are the defaults.
public struct RetrySettings: Sendable, Equatable {
    public var maxAttempts: Int
    public var baseDelay: TimeInterval
    public var multiplier: Double
    public var maxDelay: TimeInterval
    public var jitter: Jitter
    public var retryNonIdempotent: Bool
    /// nil: no budget.
    public var retryBudget: TimeInterval?

    public init(maxAttempts: Int, baseDelay: TimeInterval, multiplier: Double, maxDelay: TimeInterval, jitter: Jitter,
                retryNonIdempotent: Bool, retryBudget: TimeInterval?) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.jitter = jitter
        self.retryNonIdempotent = retryNonIdempotent
        self.retryBudget = retryBudget
    }
}

extension RetrySettings {
    /// An ``ExponentialBackoffRetryPolicy``'s defaults (made with none given, its retryable
    /// sets are the defaults, so it has settings).
    public static let defaults: RetrySettings = ExponentialBackoffRetryPolicy().settings!
}

extension ExponentialBackoffRetryPolicy {
    /// A policy with these settings and the default retryable methods, statuses and errors.
    public init(_ settings: RetrySettings) {
        self.init(maxAttempts: settings.maxAttempts, baseDelay: settings.baseDelay, multiplier: settings.multiplier,
                  maxDelay: settings.maxDelay, jitter: settings.jitter, retryNonIdempotent: settings.retryNonIdempotent,
                  retryBudget: settings.retryBudget)
    }

    /// Its settings, or nil when its retryable sets are not the defaults (a recording could
    /// not say so, and a re-send would then retry differently).
    public var settings: RetrySettings? {
        guard retryableMethods == Self.defaultRetryableMethods, retryableStatusCodes == Self.defaultRetryableStatusCodes,
              retryableErrorCodes == Self.defaultRetryableErrorCodes else { return nil }
        return RetrySettings(maxAttempts: maxAttempts, baseDelay: baseDelay, multiplier: multiplier, maxDelay: maxDelay,
                             jitter: jitter, retryNonIdempotent: retryNonIdempotent, retryBudget: retryBudget)
    }
}
