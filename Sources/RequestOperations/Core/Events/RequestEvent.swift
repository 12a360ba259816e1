import Foundation
import HTTPTypes

/// One thing that happened to one operation: the only thing that crosses from the engine
/// to the monitor, recordings and other tools.
///
/// Written as one flat object per line by the `RequestEventFormat` module: `t`, `op`,
/// `attempt`, `event`, and the payload's own fields, which RequestEvent+Fields.swift names.
/// Names here are a public contract: kinds and fields may be added, never renamed.
///
/// To add a kind: a case here (its comment gives its fields), its name in ``EventKind``, its fields in
/// RequestEvent+Fields.swift (one switch to write, one to read), then what the monitor makes
/// of it (`OperationRow.apply` and `EventDescription`). The event table in docs/event-format.md documents it.
public struct RequestEvent: Sendable, Equatable {
    /// Seconds since the session started, on the monotonic clock (`t`).
    public var time: TimeInterval
    /// The operation's id (`op`).
    public var operationID: String
    /// 1 for the first try (`attempt`).
    public var attempt: Int
    public var payload: Payload
    /// The program the event came from (`program`, added), set only where events of several
    /// programs are merged: `reqtop attach --all` names each one `name pid` (`api 4121`), and
    /// its operation ids then start with the pid (`4121/login`). Nil in a program's own stream.
    public var program: String?

    public init(time: TimeInterval, operationID: String, attempt: Int, payload: Payload, program: String? = nil) {
        self.time = time
        self.operationID = operationID
        self.attempt = attempt
        self.payload = payload
        self.program = program
    }

    /// What happened. The comment on each case gives its `event` name and fields.
    ///
    /// The three large cases (`queued`, `built`, `finished`) are `indirect`: stored inline they
    /// made every event 208 bytes, and a monitor keeps every event of every row; boxed, an
    /// event is 72 bytes (2.4 KiB per finished operation in the monitor bench, from 4.5).
    public enum Payload: Sendable, Equatable {
        /// `queued`: `method`, `url`, `headers` (the request as first built), `maxAttempts`
        /// (when the retry policy has a fixed limit), the body (`body` as text or
        /// `bodyBase64`, `bodyBytes`, or `bodyOmitted` with why) and the options that can be
        /// written down (`timeout`, `deadline`, `retryBaseDelay`, ... see ``RecordedOptions``).
        indirect case queued(method: String, url: String, headers: [String: String], maxAttempts: Int?,
                    body: RecordedBody? = nil, options: RecordedOptions? = nil)
        /// `built`: `method`, `url`, `headers` and the body of the request a dependent
        /// operation built from its parents' results, once, before its first attempt. It
        /// replaces the `queued` request (which held the request before the parents' values).
        indirect case built(method: String, url: String, headers: [String: String], body: RecordedBody?)
        /// `started`: an attempt got a slot and begins to prepare its request.
        case started
        /// `preparationFailed`: `reason`. Preparing the request threw; the retry policy decides.
        case preparationFailed(reason: String)
        /// `taskCreated`: `task` (the URLSession task identifier), `url` as sent; `insecure`
        /// (added: `true` when the transport does not verify TLS certificates; absent otherwise).
        case taskCreated(taskIdentifier: Int, url: String, insecure: Bool = false)
        /// `injected` (added): `fault` (what: `status 503`, `delay 0.8 s`, `reset`, `stall`,
        /// `truncate after 32 bytes`), `rule` (the match that picked the request), `by` (who
        /// set it: `plan`, `library`, `monitor`). What follows on this attempt is reqtop's
        /// doing, not the server's (``FaultRules``).
        case injected(fault: String, rule: String, by: String)
        /// `breakpoint` (added): `id` (the breakpoint's number), `rule` (its match), `by` (who
        /// set it). The attempt stopped before it was sent, holding no slot, until resolved;
        /// with `stage: "afterResponse"`, after its answer and before the retry decision.
        case breakpoint(id: Int, rule: String, by: String, afterResponse: Bool = false)
        /// `breakpointResolved` (added): `how` (`continued`, `edited and continued`, `answered
        /// 503 by hand (0 bytes)`, `failed with -1005 … by hand`, `cancelled`),
        /// `by`. An answer or failure made here is followed by `injected` on the attempt.
        case breakpointResolved(how: String, by: String)
        /// `breakpointSet` (added, no operation): `id`, `rule`, `by`, `enabled`, `stage`
        /// (`afterResponse`; absent: before sending): a breakpoint was set, or turned off or on.
        case breakpointSet(id: Int, rule: String, by: String, enabled: Bool, afterResponse: Bool)
        /// `breakpointRemoved` (added, no operation): `id`; what it stopped goes on.
        case breakpointRemoved(id: Int)
        /// `sent`: the request (head and body) was written whole. From transports that can
        /// tell (NIO); URLSession on Linux cannot. Splits an attempt's time into send and wait.
        case sent
        /// `connection`: `connection` (the transport's id of the connection, unique in the
        /// process), `reused` (false: opened for this request). The attempt's request was
        /// given a connection; before `sent`, once per redirect followed. From transports
        /// that can tell (NIO over HTTP/1.1); URLSession on Linux cannot. `proxy` (added:
        /// the proxy's `host:port` when the connection goes through one; absent when direct).
        case connection(id: Int, reused: Bool, proxy: String? = nil)
        /// `redirect`: `status`, `location`; `dropped` (the credential headers taken off
        /// because the redirect leaves the request's origin, lower-case names joined by `,`,
        /// absent when none); `refused` (why the redirect was not followed, absent when it
        /// was: only `http` and `https` are). See `RedirectSafety`.
        case redirect(status: Int, location: String, dropped: [String] = [], refused: String? = nil)
        /// `response`: `status`, `headers`, `expectedBytes` (absent when unknown); `httpVersion`
        /// (added: `HTTP/1.1`, `HTTP/2.0`, from transports that can tell: NIO).
        case response(status: Int, headers: [String: String], expectedBytes: Int?, httpVersion: String? = nil)
        /// `data`: `bytes` that came since the attempt's last `data` event: one for the first
        /// part, then one per 256 KiB or 100 ms, and the rest before `taskCompleted`.
        case data(bytes: Int)
        /// `uploaded` (added): the request's body on its way: `bytes` sent so far in this
        /// attempt, `totalBytes` when its length is known. Published about every hundredth of
        /// the body (at least 64 KiB apart, 1 MiB without a length) and when it is all sent.
        case uploaded(bytes: Int, totalBytes: Int?)
        /// `responseBody` (added): what the server answered, once per attempt that got a
        /// response, before `taskCompleted`: the body fields as `queued` has them (`body` as
        /// text or `bodyBase64`, `bodyBytes` carried; `bodyOmitted` with why), `totalBytes`
        /// (the whole body's size), `truncated` (true when cut at the cap,
        /// ``RequestOptions/responseBodyCap``), `mediaType` (the Content-Type, when given).
        indirect case responseBody(body: RecordedBody, totalBytes: Int, truncated: Bool, mediaType: String?)
        /// `requestBody` (added): a request body that was streamed (`queued` could not carry
        /// it: `bodyOmitted` "a stream"), as it went, once per attempt before `taskCompleted`:
        /// the body fields as `queued` has them, up to the queue's body limit, `totalBytes`
        /// (what the body's source gave in all), `truncated` (true when cut at the limit),
        /// `mediaType` (the request's Content-Type, when given). From bodies that keep what
        /// passed (a proxy's client's upload, ``BodyParts/keptForEvents``).
        indirect case requestBody(body: RecordedBody, totalBytes: Int, truncated: Bool, mediaType: String?)
        /// `headerFields` (added): a head's fields as they were said — in order, each repeat a
        /// line of its own, names as spelled — where that is known: `side` (`request`: as the
        /// proxy's client sent them; `response`: as the upstream answered), `fields` (the
        /// lines, `Name: value`, joined by `\n`). After `queued` and after `response`, for
        /// requests with ``RequestOptions/relaysFieldsAsWritten`` (the proxy's). `headers` beside it
        /// stays one value per name.
        indirect case headerFields(side: FieldSide, fields: HTTPFields)
        /// `messages` (added): a WebSocket relayed by the proxy, its whole messages so far each
        /// way — `fromClient`, `toClient` — at most twice a second while they change. Their
        /// first bytes come as the row's `requestBody` and `responseBody` when it closes.
        case messages(fromClient: Int, toClient: Int)
        /// `trailers` (added): the fields that came after a body, as they were said: `side`
        /// (`request`: a client's trailers, sent on; `response`: the upstream's, gRPC's
        /// `grpc-status` among them), `fields` as `headerFields` writes them. Before
        /// `taskCompleted`, from a transport that reads them (NIO), for requests that ask for
        /// them (a proxy's client's; `TE: trailers`).
        indirect case trailers(side: FieldSide, fields: HTTPFields)
        /// `taskCompleted`: `error`, null or `{"code": URLError code, "message": ...}`.
        case taskCompleted(error: TransportError?)
        /// `validationFailed`: `reason`.
        case validationFailed(reason: String)
        /// `retryScheduled`: `delay` in seconds, `reason`.
        case retryScheduled(delay: TimeInterval, reason: String)
        /// `retryDenied`: `reason`. The retry policy wanted a retry and the host's retry
        /// budget refused it (``RetryBudget``); the operation ends as a failure.
        case retryDenied(reason: String)
        /// `hedged`: `racing` (the attempt it races), `after` (seconds that attempt went
        /// without a response). A hedged read: a new attempt (this event's `attempt`) sent
        /// alongside one still waiting; the first response wins and the others end with
        /// `taskCompleted` error -999 "cancelled by hedge …" (``HedgePolicy``).
        case hedged(racing: Int, after: TimeInterval)
        /// `circuitWaiting`: `host`. The operation's next attempt waits, without a slot, for
        /// the host's circuit breaker (open, or half-open with its probe out).
        case circuitWaiting(host: String)
        /// `circuitOpened`: `host`, `reason`, `until` (the session time `t` it half-opens;
        /// absent when isolated by hand). A host-level event: `op` is empty, `attempt` 0.
        case circuitOpened(host: String, reason: String, until: TimeInterval?)
        /// `circuitHalfOpen`: `host`. One probe may go through. Host-level (`op` empty).
        case circuitHalfOpen(host: String)
        /// `circuitClosed`: `host`, `reason` (`the probe succeeded`, `closed by monitor`).
        /// Host-level (`op` empty).
        case circuitClosed(host: String, reason: String)
        /// `rateLimitWaiting`: `host`, `until` (the session time `t` the host's pause ends).
        /// The operation's next attempt waits, without a slot, because the host asked every
        /// client to slow down (``RateLimitPushback``).
        case rateLimitWaiting(host: String, until: TimeInterval)
        /// `rateLimited`: `host`, `until`, `reason` (the header that asked). Host-level (`op`
        /// empty): the host asked for a pause, or a longer one.
        case rateLimited(host: String, until: TimeInterval, reason: String)
        /// `retryBudget`: `host`, `left` (retries the host's retry budget still allows in its
        /// window, just after a retry or hedge spent one or was refused). Host-level (`op`
        /// empty), for the Hosts view's BUDGET column.
        case retryBudget(host: String, left: Int)
        /// `earlyRetry`: `trigger` (`manual`, `probe`, `host-success:<op>`), `delay` until the attempt.
        case earlyRetry(trigger: String, delay: TimeInterval)
        /// `intercepted`: `by` (the interceptor's name), `command` (`execute`, `hold`,
        /// `discard`, `forceExecute`).
        case intercepted(by: String, command: String)
        /// `held`: `batch`. An interceptor holds the request until the batch is released.
        case held(batch: String)
        /// `released`: `batch`, `size` (how many requests were released together).
        case released(batch: String, size: Int)
        /// `reactorStarted`: `name`, `trigger` (why: "status 401", ...). Published on the
        /// operation whose result started the run.
        case reactorStarted(name: String, trigger: String)
        /// `reactorWaiting`: `name`. The operation waits for a reactor run to end (it
        /// triggered the run too, or the reactor holds new requests while it runs).
        case reactorWaiting(name: String)
        /// `reactorFinished`: `name`, `outcome` (`success` or the error), on each waiting operation.
        case reactorFinished(name: String, outcome: ReactorOutcome)
        /// `requeued`: `by` (the reactor), `reason`. The next attempt starts at once,
        /// without asking the retry policy.
        case requeued(by: String, reason: String)
        /// `cancelled`: `by` (who cancelled: `caller`, `cancelAll`, `deadline`, ...).
        case cancelled(by: String)
        /// `finished`: `outcome`, `status` (null without a response), `attempts`, `duration`, `reason`.
        indirect case finished(outcome: RequestOutcome, status: Int?, attempts: Int, duration: TimeInterval, reason: String?)
        /// `missed`: `count` events a consumer of ``EventHub/stream(bufferLimit:)`` did not
        /// get because it fell behind; `op` is empty. Never published by an operation.
        case missed(count: Int)
        /// Any kind this version does not know, kept by name so newer files still read.
        case other(name: String)
    }
}

extension RequestEvent.Payload {
    /// The host a host-level event (a circuit breaker's change) or a `circuitWaiting` names.
    public var host: String? {
        switch self {
        case .circuitOpened(let host, _, _), .circuitHalfOpen(let host), .circuitClosed(let host, _), .circuitWaiting(let host),
             .rateLimitWaiting(let host, _), .rateLimited(let host, _, _), .retryBudget(let host, _): host
        default: nil
        }
    }
}

/// How an operation ended.
public enum RequestOutcome: String, Sendable, Equatable, Codable {
    case success
    case failure
    case cancelled
    /// An answer other than 2xx passed on as it came (``RequestOptions/relaysEveryAnswer``: a
    /// transparent proxy's 304, 404 or 503 went to its client): not the operation's failure.
    /// Added to the event format (`finished`'s `outcome`).
    case relayed
}

/// A transport error as it appears in events: the `URLError` code and a message.
///
/// FoundationNetworking on Linux gives no localized text for most codes, so the message
/// is made here from the code.
public struct TransportError: Sendable, Equatable, Codable {
    public var code: Int
    public var message: String
    /// Why the TLS handshake failed, when it did (`tls` in the error object; added).
    public var tls: TLSFailure?
    /// Which limit a timed-out attempt ran into (`timeout` in the error object; added).
    public var timeout: TimeoutKind?
    /// A hedged copy cancelled because another attempt answered or ended first (`hedge: true`
    /// in the error object; added): not the operation's error.
    public var cancelledByHedge: Bool

    public init(code: Int, message: String, tls: TLSFailure? = nil, timeout: TimeoutKind? = nil, cancelledByHedge: Bool = false) {
        self.code = code
        self.message = message
        self.tls = tls
        self.timeout = timeout
        self.cancelledByHedge = cancelledByHedge
    }

    /// Recordings made before `hedge` was written say it only in the message's words: read
    /// them so (the one place the words are read).
    public static func legacyHedge(code: Int, message: String) -> Bool {
        code == URLError.Code.cancelled.rawValue && message.hasPrefix("cancelled by hedge")
    }

    /// The code and message of a task's error. The message is libcurl's own text when
    /// FoundationNetworking passes it on ("Recv failure: Connection reset by peer"), else a
    /// name for the code.
    ///
    /// On Linux a body cut short by the server arrives as code -1 (unknown) with curl's
    /// "transfer closed with N bytes remaining to read": it is reported here as -1005
    /// (network connection lost), which is what it is, so retry policies can judge it.
    public init(_ error: Error) {
        let nsError = error as NSError
        let detail = nsError.userInfo[NSLocalizedDescriptionKey] as? String
        guard nsError.domain == NSURLErrorDomain || error is URLError else {
            self.init(code: nsError.code, message: detail ?? "\(nsError.domain) \(nsError.code)")
            return
        }
        var code = URLError.Code(rawValue: nsError.code) ?? .unknown
        if code == .unknown, let detail, detail.hasPrefix("transfer closed with") {
            code = .networkConnectionLost
        }
        // libcurl calls an answer that is no HTTP/1.x answer an unsupported protocol (-1002,
        // as if the URL were at fault): a status line of `000`, HTTP/0.9, a version it does
        // not know. The server answered badly, as NIO says (-1011).
        if code == .unsupportedURL, let detail, Self.badAnswerWords.contains(where: { detail.contains($0) }) {
            code = .badServerResponse
        }
        // libcurl's CURLE_BAD_CONTENT_ENCODING: a body that is not what Content-Encoding says.
        if code == .unknown, let detail, detail.hasPrefix("Error while processing content unencoding") {
            code = .cannotDecodeContentData
        }
        // A transport that knows the TLS library's reason says it (NIO); on Linux URLSession
        // gives TLS failures as -1 with libcurl's words, which carry OpenSSL's verify reason
        // ("certificate has expired"): the only thing it hands on, so they are read for it.
        var tls = (nsError.userInfo[TLSFailure.userInfoKey] as? String).flatMap(TLSFailure.init(rawValue:))
        if tls == nil, code == .unknown, let detail {
            tls = TLSFailure.fromCurlMessage(detail)
        }
        // A TLS 1.3 server that wants a client certificate says so in an alert after the
        // handshake, which libcurl reports while reading (-1005, "tlsv13 alert certificate
        // required"): named as the refusal it is (-1206), as NIO names it.
        if tls == nil, code == .networkConnectionLost, let detail,
           let said = TLSFailure.fromCurlMessage(detail), said == .clientCertificateRequired || said == .clientCertificateRejected {
            tls = said
        }
        if let tls, code == .unknown || code == .secureConnectionFailed || code == .serverCertificateUntrusted || code == .networkConnectionLost {
            code = tls.code
        }
        var timeout = (nsError.userInfo[TimeoutKind.userInfoKey] as? String).flatMap(TimeoutKind.init(rawValue:))
        if timeout == nil, code == .timedOut, let detail { timeout = TimeoutKind.fromCurlMessage(detail) }
        let usable = detail.flatMap { $0.isEmpty || $0.hasPrefix("The operation could not be completed") ? nil : $0 }
        self.init(code: code.rawValue, message: usable ?? tls?.summary ?? TransportError.describe(code), tls: tls, timeout: timeout)
    }

    /// libcurl's words for an answer that is not HTTP it can read.
    static let badAnswerWords = ["Unsupported response code", "Received HTTP/0.9", "Unsupported HTTP version", "Weird server reply"]

    /// A short English name for a `URLError` code.
    public static func describe(_ code: URLError.Code) -> String {
        switch code {
        case .cancelled: "cancelled"
        case .timedOut: "timed out"
        case .cannotFindHost: "cannot find host"
        case .cannotConnectToHost: "cannot connect to host"
        case .networkConnectionLost: "network connection lost"
        case .dnsLookupFailed: "DNS lookup failed"
        case .notConnectedToInternet: "not connected to the internet"
        case .badServerResponse: "bad server response"
        case .secureConnectionFailed: "TLS handshake failed"
        case .serverCertificateUntrusted: "TLS certificate not trusted"
        case .serverCertificateHasBadDate: "TLS certificate expired or not yet valid"
        case .serverCertificateHasUnknownRoot: "TLS certificate from an unknown authority"
        case .clientCertificateRejected: "TLS client certificate rejected"
        case .clientCertificateRequired: "TLS client certificate required"
        case .serverCertificateNotYetValid: "TLS certificate not yet valid"
        case .badURL: "bad URL"
        case .unsupportedURL: "unsupported URL"
        case .httpTooManyRedirects: "too many redirects"
        case .zeroByteResource: "zero byte resource"
        case .cannotParseResponse: "cannot parse response"
        case .userAuthenticationRequired: "user authentication required"
        case .resourceUnavailable: "resource unavailable"
        case .requestBodyStreamExhausted: "request body stream cannot be sent again"
        case .cannotDecodeContentData: "the body is not what its Content-Encoding says"
        case .dataLengthExceedsMaximum: "the body is over its limit"
        default: "URL error \(code.rawValue)"
        }
    }
}

/// Which head a ``RequestEvent/Payload/headerFields(side:fields:)`` event is of.
public enum FieldSide: String, Sendable, CaseIterable {
    /// The request, as its sender (a proxy's client) wrote it.
    case request
    /// The answer, as the server sent it.
    case response
}
