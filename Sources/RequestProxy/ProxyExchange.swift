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
import RequestTransportNIO
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
    /// The request's host: the options set for it, and the words of a failure through a
    /// chained proxy. Read once from its URL (each `URL.host` decodes it again).
    private let host: String?
    /// What only the client's event loop touches.
    private let onLoop: NIOLoopBoundBox<LoopState>
    /// Bytes of the answer given to the client's channel and not written out yet, from any thread.
    private let outflow = Mutex(Outflow())

    private struct LoopState {
        /// Where the exchange is, and what that stage holds.
        var stage = ProxyExchangeStage.receivingRequest(held: [])
        /// The operation, until it ended: it holds this exchange (its answer's receiver), so
        /// holding it after would keep both for ever (every request's, 3.8 KiB each, all day).
        var operation: RequestOperation?
    }

    /// How long the client may go on sending a body nobody reads after an early answer, so
    /// that it reads the answer before the connection closes (a close with unread bytes
    /// resets the connection, and the answer can be lost with it).
    static let lingerAfterEarlyAnswer: TimeAmount = .seconds(2)

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
    init(id: String, channel: Channel, proxy: ProxyContext, client: ClientOrigin, version: HTTPVersion, keepAlive: Bool, isHead: Bool,
         host: String?) {
        self.host = host
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
    var isUnderWay: Bool { onLoop.value.stage.isUnderWay }

    /// Its answer's head was written to the client and its end not yet.
    var answerIsHalfWritten: Bool {
        if case .answering(let writing) = onLoop.value.stage { writing.began } else { false }
    }

    /// Keeps `request` until its body has come (``startPrepared(body:)``).
    func prepare(_ request: RequestMessage) {
        onLoop.value.stage = .collecting(request)
    }

    /// The request, read whole, goes out with `body`.
    func startPrepared(body: Data?) {
        guard case .collecting(var request) = onLoop.value.stage else { return }
        onLoop.value.stage = .answering(ProxyAnswerWriting())
        // The transport frames the body it is given: the client's length would go out twice.
        request.headerFields[.contentLength] = nil
        if let body {
            request.body = .data(body)
        } else if ["POST", "PUT", "PATCH"].contains(request.method) {
            request.body = .data(Data())
        }
        launch(request)
    }

    /// The prepared request's body turned out longer than is read whole (an HTTP/2 stream
    /// says no length): it goes out as `upload` streams it.
    func startStreaming(_ upload: sending UploadStream) {
        guard case .collecting(var request) = onLoop.value.stage else { return }
        onLoop.value.stage = .receivingRequest(held: [])
        request.body = .stream(BodyStream(upload))
        launch(request)
    }

    /// Starts the operation while its body still streams.
    func start(_ request: RequestMessage) {
        onLoop.value.stage = .receivingRequest(held: [])
        launch(request)
    }

    /// Starts the operation once the client's program is known: the row names it from its
    /// first event.
    private func launch(_ request: RequestMessage) {
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
        if case .abandoned(clientGone: true) = onLoop.value.stage { return }
        var options = Self.options(proxy.options.operation(for: host), for: request)
        options.origin = origin
        options.clientHTTPVersion = "HTTP/\(version.major).\(version.minor)"
        options.relaysFieldsAsWritten = true
        // On the client's event loop: the operation starts here, after this turn.
        onLoop.value.operation = proxy.queue.stream(for: request, id: id, options: options, to: self)
    }

    /// The streamed request body ended whole: the answer may be written.
    func requestEnded() {
        guard case .receivingRequest(let held) = onLoop.value.stage else { return }
        onLoop.value.stage = .answering(ProxyAnswerWriting())
        held.forEach(write)
    }

    /// The client's request will not come whole: no answer is written to it.
    func requestBroken() {
        switch onLoop.value.stage {
        case .collecting, .receivingRequest: abandon(clientGone: false)
        case .answering, .answered, .abandoned: break
        }
    }

    /// The client closed its connection: the operation is cancelled (by `client`), whatever
    /// stage it is in.
    func clientWentAway() {
        abandon(clientGone: true)
    }

    /// Nothing more is written to the client: what was held is dropped and the operation
    /// cancelled (once it ended, a cancel does nothing).
    private func abandon(clientGone: Bool) {
        if case .answered = onLoop.value.stage {} else { onLoop.value.stage = .abandoned(clientGone: clientGone) }
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
                    if case .answered = exchange.onLoop.value.stage { return }
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

    private func step(_ step: ProxyAnswerStep) {
        switch onLoop.value.stage {
        case .answering: write(step)
        case .receivingRequest(var held):
            // Out of the stage while it grows, so the list is not copied.
            onLoop.value.stage = .receivingRequest(held: [])
            held.append(step)
            // A whole answer while the body still streams: the upstream wants no more of it
            // (a client waiting for that answer before it sends more would wait for ever).
            guard case .end = step else {
                onLoop.value.stage = .receivingRequest(held: held)
                return
            }
            onLoop.value.stage = .answering(ProxyAnswerWriting(early: true))
            held.forEach(write)
        case .collecting, .answered, .abandoned: break
        }
    }

    // MARK: - Writing to the client (on its event loop)

    private func write(_ step: ProxyAnswerStep) {
        guard case .answering(var writing) = onLoop.value.stage else { return }
        switch step {
        case .head(let status, _) where status < 200:
            refuse(Self.informational(status))
        case .head(let status, let headers):
            writing.began = true
            let answerHead = head(status: status, headers: headers, writing: &writing)
            onLoop.value.stage = .answering(writing)
            channel.write(HTTPServerResponsePart.head(answerHead), promise: nil)
        case .part(let data):
            let written = channel.eventLoop.makePromise(of: Void.self)
            let count = data.count
            written.futureResult.whenComplete { _ in self.wrote(count) }
            // The buffer the upstream's connection read, when the transport lent it (no copy).
            let buffer = LentBuffers.buffer(for: data) ?? ByteBuffer(data: data)
            channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer)), promise: written)
        case .end(let result):
            onLoop.value.stage = .answered
            if writing.began {
                // Cut mid-body (the upstream failed, or the client went away): the client sees
                // the connection end short of the length it was told (or without the last chunk).
                guard result.outcome == .success || result.outcome == .relayed else { return channel.close(promise: nil) }
                // The upstream's trailers (gRPC's status) after the body, as it sent them.
                return end(trailers: result.trailers, writing: writing)
            }
            answerWithout(result, writing: writing)
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
        let abandoned = if case .abandoned = onLoop.value.stage { true } else { false }
        // Answered before the cancel: it can end the operation at once, on this loop, and its
        // end must find the answer written, not write one of its own.
        if !abandoned { onLoop.value.stage = .answered }
        onLoop.value.operation?.cancel(by: Self.proxyCanceller)
        guard !abandoned else { return }
        answer.send(on: channel, closing: true)
    }

    /// No valid answer began: the upstream's own answer the engine judged a failure (a 404, a
    /// 503), passed on as it came, or one of the proxy's own.
    private func answerWithout(_ result: RequestResult, writing: ProxyAnswerWriting) {
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
            answerWhole(status: status, headers: headers, body: result.data, writing: writing)
        } else {
            var failure = ProxyFailureAnswer(result.error ?? .cancelled(by: "unknown"))
            // Through a chained proxy, an address in the transport's words is the chain's
            // (a refused connect names it, not the request's host): said so.
            if let chain = proxy.options.chain, let host, !chain.bypasses(host) {
                failure = failure.through(chain)
            }
            answerWhole(status: failure.status, headers: failure.headers, body: Data(failure.body.utf8), writing: writing)
        }
    }

    private func head(status: Int, headers: [(String, String)], writing: inout ProxyAnswerWriting) -> HTTPResponseHead {
        var fields = HTTPHeaders(headers)
        if version == .http1_0, keepAlive, !writing.early {
            // A 1.0 client asked to keep the connection (`ab -k`): it may, when the answer says
            // so and has a length; an answer of no known length ends with the close instead.
            let bodiless = isHead || status == 204 || status == 304
            if fields.contains(name: "Content-Length") || bodiless {
                fields.replaceOrAdd(name: "Connection", value: "keep-alive")
            } else {
                writing.endsWithClose = true
            }
        }
        // HTTP/2 has no connection fields: a stream ends with its answer (or is reset).
        if version.major < 2, !keepAlive || writing.early || writing.endsWithClose {
            fields.replaceOrAdd(name: "Connection", value: "close")
        }
        return HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: status), headers: fields)
    }

    private func answerWhole(status: Int, headers: [(String, String)], body: Data, writing: ProxyAnswerWriting) {
        var writing = writing
        channel.write(HTTPServerResponsePart.head(head(status: status, headers: headers, writing: &writing)), promise: nil)
        if !isHead, !body.isEmpty { channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(data: body))), promise: nil) }
        end(writing: writing)
    }

    private func end(trailers: HTTPFields? = nil, writing: ProxyAnswerWriting) {
        let written = channel.writeAndFlush(HTTPServerResponsePart.end(trailers.map(HTTPHeaders.init)))
        let channel = self.channel
        if writing.early {
            written.whenComplete { _ in
                channel.eventLoop.scheduleTask(in: Self.lingerAfterEarlyAnswer) { channel.close(promise: nil) }
            }
        } else if keepAlive, !writing.endsWithClose {
            written.whenFailure { _ in channel.close(promise: nil) }
        } else {
            written.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
