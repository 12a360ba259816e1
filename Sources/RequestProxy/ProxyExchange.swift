import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOHTTPTypesHTTP1
import RequestOperations
import Synchronization

/// One client request, run as one operation on the proxy's queue, and its answer written
/// back: the upstream's answer as it came (its body written as the transport reads it, the
/// upstream read on only while the client keeps up), or one of the proxy's own
/// (``ProxyFailureAnswer``) when there was none to pass on.
///
/// The operation is started on the client's event loop and hands its answer here as a
/// ``ResponseStreamReceiver``, with no Task between: a Task reading the answer cost two
/// thread switches a request more (small GETs through the proxy ran 8–22 % slower).
final class ProxyExchange: ResponseStreamReceiver {
    let id: String
    private let channel: Channel
    private let proxy: ProxyContext
    private let client: ClientOrigin
    private let version: HTTPVersion
    private let keepAlive: Bool
    private let isHead: Bool
    /// What only the client's event loop touches.
    private let onLoop: NIOLoopBoundBox<LoopState>
    /// Bytes of the answer given to the client's channel and not written out yet, from any thread.
    private let outflow = Mutex(Outflow())

    private struct LoopState {
        /// The request, kept until its body has come (``startPrepared(body:)``).
        var request: RequestMessage?
        /// The operation, until it ended: it holds this exchange (its answer's receiver), so
        /// holding it after would keep both for ever (every request's, 3.8 KiB each, all day).
        var operation: RequestOperation?
        /// The request's host, for the words of a failure through a chained proxy.
        var host: String?
        var underWay = false
        var clientGone = false
        /// How far the client's request has come.
        var arrival = ClientRequestArrival.streaming
        /// What the answer did before the request came whole, done once it has: an answer is
        /// written only after the request (HTTP/1.1 allows an early one, but NIO's server
        /// pipeline and many clients do not expect it, and an upstream that answered early
        /// let go of the body). Bounded: the upstream waits once ``ProxyOptions/downloadBuffer``
        /// is held.
        var held: [AnswerStep] = []
        var answerBegan = false
        var answered = false
        /// The answer ended before the request did (the upstream answered early, a 413, and
        /// took no more of the body): it is written at once, marked `Connection: close`, and
        /// the connection closed soon after, whatever the client still sends.
        var answeredEarly = false
        /// The answer's end is the connection's: an HTTP/1.0 client's answer of no known length
        /// (1.0 has no chunks: the close is its end).
        var endsWithClose = false
    }

    /// How long the client may go on sending a body nobody reads after an early answer, so
    /// that it reads the answer before the connection closes (a close with unread bytes
    /// resets the connection, and the answer can be lost with it).
    static let lingerAfterEarlyAnswer: TimeAmount = .seconds(2)

    private enum AnswerStep {
        case head(status: Int, headers: [(String, String)])
        case part(Data)
        case end(RequestResult)
    }

    private struct Outflow {
        var unwritten = 0
        /// The transport, waiting for the client to take what it was given.
        var resume: (@Sendable () -> Void)?
    }

    /// The error an upload ends with when the client went away mid-body.
    struct ClientGone: Error, CustomStringConvertible {
        var description: String { "the client closed the connection before its request body ended" }
    }

    /// Who an operation is cancelled by when its client went away.
    static let clientCanceller = "client"
    /// Who an operation is cancelled by when its upstream's answer cannot be passed on.
    static let proxyCanceller = "proxy"

    /// Made on `channel`'s event loop.
    init(id: String, channel: Channel, proxy: ProxyContext, client: ClientOrigin, version: HTTPVersion, keepAlive: Bool, isHead: Bool) {
        self.id = id
        self.channel = channel
        self.proxy = proxy
        self.client = client
        self.version = version
        self.keepAlive = keepAlive
        self.isHead = isHead
        onLoop = NIOLoopBoundBox(LoopState(), eventLoop: channel.eventLoop)
    }

    // MARK: - The client's side (on its event loop)

    /// Whether the request is still being answered (the connection is not idle).
    var isUnderWay: Bool { onLoop.value.underWay }

    /// Keeps `request` until its body has come (``startPrepared(body:)``).
    func prepare(_ request: RequestMessage) {
        onLoop.value.request = request
        onLoop.value.underWay = true
    }

    /// The request, read whole, goes out with `body`.
    func startPrepared(body: Data?) {
        onLoop.value.arrival = .whole
        guard var request = onLoop.value.request else { return }
        onLoop.value.request = nil
        // The transport frames the body it is given: the client's length would go out twice.
        request.headerFields[.contentLength] = nil
        if let body {
            request.body = .data(body)
        } else if ["POST", "PUT", "PATCH"].contains(request.method) {
            request.body = .data(Data())
        }
        start(request)
    }

    /// The prepared request's body turned out longer than is read whole (an HTTP/2 stream
    /// says no length): it goes out as `upload` streams it.
    func startStreaming(_ upload: sending UploadStream) {
        guard var request = onLoop.value.request else { return }
        onLoop.value.request = nil
        request.body = .stream(BodyStream(upload))
        start(request)
    }

    /// Starts the operation (its body, if streamed, still arriving) once the client's program
    /// is known: the row names it from its first event.
    func start(_ request: RequestMessage) {
        onLoop.value.underWay = true
        let loop = channel.eventLoop
        client.whenFound { [self] program in
            if loop.inEventLoop {
                run(request, origin: program)
            } else {
                loop.execute { self.run(request, origin: program) }
            }
        }
    }

    private func run(_ request: RequestMessage, origin: String?) {
        guard !onLoop.value.clientGone else { return }
        var options = Self.options(proxy.options.operation(for: request.url.host), for: request)
        options.origin = origin
        options.clientHTTPVersion = "HTTP/\(version.major).\(version.minor)"
        options.relaysFieldsAsWritten = true
        // On the client's event loop: the operation starts here, after this turn.
        onLoop.value.host = request.url.host
        onLoop.value.operation = proxy.queue.stream(for: request, id: id, options: options, to: self)
    }

    /// The streamed request body ended whole: the answer may be written.
    func requestEnded() {
        guard onLoop.value.arrival == .streaming else { return }
        onLoop.value.arrival = .whole
        let held = onLoop.value.held
        onLoop.value.held = []
        held.forEach(write)
    }

    /// The client's request will not come whole: no answer is written to it.
    func requestBroken() {
        guard onLoop.value.arrival == .streaming else { return }
        abandon()
    }

    /// The client closed its connection: the operation is cancelled (by `client`), whatever
    /// stage it is in.
    func clientWentAway() {
        onLoop.value.clientGone = true
        abandon()
    }

    /// Nothing more is written to the client: what was held is dropped and the operation
    /// cancelled (once it ended, a cancel does nothing).
    private func abandon() {
        if onLoop.value.arrival == .streaming { onLoop.value.arrival = .broken }
        onLoop.value.held = []
        onLoop.value.operation?.cancel(by: Self.clientCanceller)
    }

    /// `options` for `request`: a body streamed from the client is read once, so such a
    /// request is sent once — never retried or hedged, whatever the configuration says.
    static func options(_ options: RequestOptions, for request: RequestMessage) -> RequestOptions {
        guard request.body.stream != nil else { return options }
        var once = options
        once.retryPolicy = ExponentialBackoffRetryPolicy.never
        once.hedge = nil
        return once
    }

    // MARK: - The answer (from the transport's thread)

    func answerBegan(status: Int, headers: [String: String], repeatedHeaders: [String: [String]]) {
        answerBegan(status: status, headers: headers, repeatedHeaders: repeatedHeaders, fields: nil)
    }

    /// Passed on as it came: the fields in their order, names as the server spelled them, each
    /// repeat apart (two `Set-Cookie` stay two), where the transport kept them (NIO's).
    func answerBegan(status: Int, headers: [String: String], repeatedHeaders: [String: [String]], fields received: HTTPFields?) {
        if let coding = headers.value(forHTTPHeader: "Transfer-Encoding") {
            let codings = HopByHopHeaders.otherTransferCodings(in: [coding])
            if !codings.isEmpty {
                let words = "the upstream's answer uses the transfer coding \(codings.joined(separator: ", ")), which this proxy does not decode"
                return onClientLoop { exchange in
                    guard !exchange.onLoop.value.answered else { return }
                    exchange.refuse(ProxyFailureAnswer(status: 502, errorType: "http_protocol_error", message: words))
                }
            }
        }
        let fields = received.map(HopByHopHeaders.removed(from:)) ?? HopByHopHeaders.removed(from: headers, repeated: repeatedHeaders)
        onClientLoop { $0.step(.head(status: status, headers: fields)) }
    }


    func answerPart(_ part: Data, resume: @escaping @Sendable () -> Void) -> Bool {
        let limit = proxy.options.downloadBuffer
        let full = outflow.withLock { outflow -> Bool in
            outflow.unwritten += part.count
            guard outflow.unwritten >= limit else { return false }
            outflow.resume = resume
            return true
        }
        onClientLoop { $0.step(.part(part)) }
        return !full
    }

    func answerEnded(_ result: RequestResult) {
        onClientLoop { exchange in
            exchange.onLoop.value.operation = nil
            exchange.step(.end(result))
        }
    }

    private func onClientLoop(_ work: @escaping @Sendable (ProxyExchange) -> Void) {
        if channel.eventLoop.inEventLoop {
            work(self)
        } else {
            channel.eventLoop.execute { work(self) }
        }
    }

    private func step(_ step: AnswerStep) {
        switch onLoop.value.arrival {
        case .whole: write(step)
        case .streaming:
            onLoop.value.held.append(step)
            // A whole answer while the body still streams: the upstream wants no more of it
            // (a client waiting for that answer before it sends more would wait for ever).
            guard case .end = step else { return }
            onLoop.value.answeredEarly = true
            onLoop.value.arrival = .whole
            let held = onLoop.value.held
            onLoop.value.held = []
            held.forEach(write)
        case .broken: break
        }
    }

    // MARK: - Writing to the client (on its event loop)

    private func write(_ step: AnswerStep) {
        guard !onLoop.value.answered else { return }
        switch step {
        case .head(let status, _) where status < 200:
            refuse(Self.informational(status))
        case .head(let status, let headers):
            onLoop.value.answerBegan = true
            channel.write(HTTPServerResponsePart.head(head(status: status, headers: headers)), promise: nil)
        case .part(let data):
            let written = channel.eventLoop.makePromise(of: Void.self)
            let count = data.count
            written.futureResult.whenComplete { _ in self.wrote(count) }
            channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(data: data))), promise: written)
        case .end(let result):
            onLoop.value.answered = true
            onLoop.value.underWay = false
            if onLoop.value.answerBegan {
                // Cut mid-body (the upstream failed, or the client went away): the client sees
                // the connection end short of the length it was told (or without the last chunk).
                guard result.outcome == .success || result.outcome == .relayed else { return channel.close(promise: nil) }
                // The upstream's trailers (gRPC's status) after the body, as it sent them.
                return end(trailers: result.trailers)
            }
            answerWithout(result)
        }
    }

    /// `count` bytes went out (or never will: the client went away): the transport reads on
    /// once less than half of ``ProxyOptions/downloadBuffer`` waits.
    private func wrote(_ count: Int) {
        let limit = proxy.options.downloadBuffer
        let resume = outflow.withLock { outflow -> (@Sendable () -> Void)? in
            outflow.unwritten -= count
            guard outflow.unwritten < limit / 2, let resume = outflow.resume else { return nil }
            outflow.resume = nil
            return resume
        }
        resume?()
    }

    /// A 101 to a request that asked for no upgrade (upgrades are ``ProxyUpgrade``'s): the
    /// client cannot read what follows as HTTP, and would wait for ever. The upstream's error,
    /// said at once; the connection closes after it.
    private static func informational(_ status: Int) -> ProxyFailureAnswer {
        ProxyFailureAnswer(status: 502, errorType: "http_protocol_error", message: "the upstream answered \(status) to a request that asked for no upgrade")
    }

    /// The upstream's answer cannot be passed on (a 101 nobody asked for, a transfer coding
    /// the proxy cannot frame again): `answer` instead, the operation cancelled, and the
    /// connection closed after it — unless the client is gone.
    private func refuse(_ answer: ProxyFailureAnswer) {
        onLoop.value.answered = true
        onLoop.value.underWay = false
        onLoop.value.operation?.cancel(by: Self.proxyCanceller)
        guard onLoop.value.arrival != .broken else { return }
        answer.send(on: channel, closing: true)
    }

    /// No valid answer began: the upstream's own answer the engine judged a failure (a 404, a
    /// 503), passed on as it came, or one of the proxy's own.
    private func answerWithout(_ result: RequestResult) {
        if case .cancelled(by: Self.clientCanceller)? = result.error { return channel.close(promise: nil) }
        // An HTTP/2 stream whose operation was cancelled (a person's X) is reset (`RST_STREAM`
        // CANCEL, swift-nio-http2's on a stream closed early): the client's own words for a
        // cancel, and its other streams go on.
        if version.major >= 2, case .cancelled? = result.error { return channel.close(promise: nil) }
        if let status = result.status, status < 200 { return refuse(Self.informational(status)) }
        if let status = result.status {
            // As it came: in order, names as spelled, where the transport kept them (NIO's).
            var headers = (result.fields.map(HopByHopHeaders.removed(from:)) ?? HopByHopHeaders.removed(from: result.headers, repeated: result.repeatedHeaders))
                .filter { $0.0.lowercased() != "content-length" }
            headers.append(("Content-Length", String(result.data.count)))
            answerWhole(status: status, headers: headers, body: result.data)
        } else {
            var failure = ProxyFailureAnswer(result.error ?? .cancelled(by: "unknown"))
            // Through a chained proxy, an address in the transport's words is the chain's
            // (a refused connect names it, not the request's host): said so.
            if let chain = proxy.options.chain, let host = onLoop.value.host, !chain.bypasses(host) {
                failure = failure.through(chain)
            }
            answerWhole(status: failure.status, headers: failure.headers, body: Data(failure.body.utf8))
        }
    }

    private func head(status: Int, headers: [(String, String)]) -> HTTPResponseHead {
        var fields = HTTPHeaders(headers)
        if version == .http1_0, keepAlive, !onLoop.value.answeredEarly {
            // A 1.0 client asked to keep the connection (`ab -k`): it may, when the answer says
            // so and has a length; an answer of no known length ends with the close instead.
            let bodiless = isHead || status == 204 || status == 304
            if fields.contains(name: "Content-Length") || bodiless {
                fields.replaceOrAdd(name: "Connection", value: "keep-alive")
            } else {
                onLoop.value.endsWithClose = true
            }
        }
        // HTTP/2 has no connection fields: a stream ends with its answer (or is reset).
        if version.major < 2, !keepAlive || onLoop.value.answeredEarly || onLoop.value.endsWithClose {
            fields.replaceOrAdd(name: "Connection", value: "close")
        }
        return HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: status), headers: fields)
    }

    private func answerWhole(status: Int, headers: [(String, String)], body: Data) {
        channel.write(HTTPServerResponsePart.head(head(status: status, headers: headers)), promise: nil)
        if !isHead, !body.isEmpty { channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(data: body))), promise: nil) }
        end()
    }

    private func end(trailers: HTTPFields? = nil) {
        let written = channel.writeAndFlush(HTTPServerResponsePart.end(trailers.map(HTTPHeaders.init)))
        let channel = self.channel
        if onLoop.value.answeredEarly {
            written.whenComplete { _ in
                channel.eventLoop.scheduleTask(in: Self.lingerAfterEarlyAnswer) { channel.close(promise: nil) }
            }
        } else if keepAlive, !onLoop.value.endsWithClose {
            written.whenFailure { _ in channel.close(promise: nil) }
        } else {
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
