import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOHTTPTypesHTTP1
import NIOHTTP2
import NIOSSL
import RequestOperations

/// One client connection's requests, in order: each becomes a ``ProxyExchange`` (one
/// operation); a `CONNECT` turns the connection into a tunnel or, intercepted, into TLS with
/// this handler again inside it (``origin`` then names the host every request goes to).
final class ProxyConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// A request body up to this size is read whole before the operation starts (so its
    /// events carry the body, for the monitor and copy as curl); a larger one, or a chunked
    /// one, streams.
    static let wholeBodyLimit = 64 * 1024

    private let proxy: ProxyContext
    private let connection: Int
    private let origin: URL?
    /// The local program at the other end, found as the connection opened.
    private let client: ClientOrigin
    /// Its HTTP/1 handlers, taken out for a tunnel or an upgrade; nil on an HTTP/2 stream.
    private let codec: ClientCodec?
    /// Closes the connection when a head is slow to come (HTTP/1 only: an HTTP/2 stream's
    /// head comes whole in one HEADERS frame).
    private let headTimer: RequestHeadTimer?
    /// The HTTP/2 stream this handler reads, or nil on an HTTP/1 connection.
    private let streamID: Int?
    private var requests = 0
    private var receiving = Receiving.idle
    /// The latest exchange: told when the client goes away.
    private var exchange: ProxyExchange?

    private enum Receiving {
        case idle
        /// A body read whole before the operation starts.
        case collecting(ProxyExchange, ByteBuffer)
        case streaming(ProxyExchange, UploadBuffer)
        case connect(host: String, port: Int, id: String)
        /// An `Upgrade` request (a WebSocket): sent on once it has come whole, its body too.
        case upgrade(HTTPRequestHead, URL, id: String, body: ByteBuffer)
        /// Answered already (a 400, a 407): the rest of the request is dropped.
        case refused
    }

    private init(proxy: ProxyContext, connection: Int, origin: URL?, client: ClientOrigin, headTimer: RequestHeadTimer?, codec: ClientCodec?,
                 streamID: Int? = nil) {
        self.proxy = proxy
        self.streamID = streamID
        self.headTimer = headTimer
        self.connection = connection
        self.origin = origin
        self.client = client
        self.codec = codec
    }

    /// Adds the HTTP/1.1 server handlers and a proxy handler to `channel` (on its event loop).
    /// - Parameters:
    ///   - idle: add the idle timer (false inside a tunnel, whose connection has one).
    ///   - client: the program at the other end.
    static func install(on channel: Channel, context: ProxyContext, connection: Int, origin: URL?, idle: Bool = true,
                        client: ClientOrigin) throws {
        let encoder = HTTPResponseEncoder()
        let decoder = ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes))
        let pipelining = HTTPServerPipelineHandler()
        let headTimer = RequestHeadTimer(timeout: .milliseconds(Int64(context.options.requestHeadTimeout * 1000)),
                                         bodyTimeout: .milliseconds(Int64(context.options.requestBodyTimeout * 1000)))
        // The timer before the decoder (it counts bytes); taken out with the codec for a tunnel.
        let handler = ProxyConnectionHandler(proxy: context, connection: connection, origin: origin, client: client, headTimer: headTimer,
                                             codec: ClientCodec(decoder: decoder, others: [headTimer, pipelining, encoder]))
        let sync = channel.pipeline.syncOperations
        if idle { try sync.addHandler(IdleWatch(timeout: .milliseconds(Int64(context.options.idleTimeout * 1000)))) }
        try sync.addHandler(encoder)
        try sync.addHandler(headTimer)
        try sync.addHandler(decoder)
        try sync.addHandler(pipelining)
        try sync.addHandler(handler)
        context.track(channel)
    }

    /// Reads one HTTP/2 stream as one request to `origin` (``ProxyHTTP2``): the stream's frames
    /// as HTTP/1 parts, its id in the request's (`c3-s5`: connection 3, stream 5).
    static func installStream(on stream: Channel, streamID: Int, context: ProxyContext, connection: Int, origin: URL, client: ClientOrigin) throws {
        let handler = ProxyConnectionHandler(proxy: context, connection: connection, origin: origin, client: client, headTimer: nil, codec: nil,
                                             streamID: streamID)
        try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
        try stream.pipeline.syncOperations.addHandler(handler)
    }

    // MARK: - The client's request

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): received(head, context: context)
        case .body(let part): receivedBody(part, context: context)
        case .end(let trailers): receivedEnd(trailers: trailers, context: context)
        }
    }

    private func received(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        headTimer?.headArrived()
        requests += 1
        let id = streamID.map { "c\(connection)-s\($0)" } ?? "c\(connection)-r\(requests)"
        if proxy.draining.load(ordering: .relaxed) {
            return refuse(ProxyFailureAnswer(status: 503, errorType: "proxy_internal_response", message: "the proxy is stopping; this request was not sent"),
                          head: head, id: id, context: context, close: true)
        }
        if origin == nil, let credentials = proxy.options.credentials,
           !credentials.accepts(head.headers.first(name: "Proxy-Authorization")) {
            return refuse(ProxyFailureAnswer(status: 407, errorType: "proxy_internal_response", message: "proxy credentials required"),
                          extra: [("Proxy-Authenticate", "Basic realm=\"reqtop\"")], head: head, id: id, context: context, close: false)
        }
        let codings = HopByHopHeaders.otherTransferCodings(in: head.headers[canonicalForm: "Transfer-Encoding"].map(String.init))
        if !codings.isEmpty {
            return refuse(ProxyFailureAnswer(status: 501, errorType: "http_request_error",
                                             message: "the transfer coding \(codings.joined(separator: ", ").prefix(100)) is not supported (only chunked)"),
                          head: head, id: id, context: context, close: true)
        }
        if HostField.isRepeated(in: head.headers) {
            return refuse(ProxyFailureAnswer(status: 400, errorType: "http_request_error", message: "more than one Host field"),
                          head: head, id: id, context: context, close: true)
        }
        let target: ProxyTarget
        switch ProxyTarget.parse(method: head.method.rawValue, target: head.uri, origin: origin) {
        case .failure(let problem):
            return refuse(ProxyFailureAnswer(status: 400, errorType: "http_request_error", message: problem.message), head: head, id: id,
                          context: context, close: true)
        case .success(let parsed):
            target = parsed
        }
        let listening = proxy.listening.withLock { $0 }
        switch target {
        case .connect(let host, let port):
            if listening.isReached(host: host, port: port) { return refuseLoop(head, id: id, context: context) }
            receiving = .connect(host: host, port: port, id: id)
        case .url(let url, let host, let port):
            // Inside a tunnel too: an absolute URL there may name the proxy as well.
            if listening.isReached(host: host, port: port) { return refuseLoop(head, id: id, context: context) }
            if head.headers.contains(name: "Upgrade") {
                // HTTP/2 has no Upgrade (swift-nio-http2 refuses the field before it gets here).
                guard streamID == nil else {
                    return refuse(ProxyFailureAnswer(status: 400, errorType: "http_request_error", message: "Upgrade is not an HTTP/2 field"),
                                  head: head, id: id, context: context, close: true)
                }
                headTimer?.bodyBegan()
                receiving = .upgrade(head, url, id: id, body: context.channel.allocator.buffer(capacity: 0))
                return
            }
            start(head, url: url, host: host, id: id, context: context)
        }
    }

    private func start(_ head: HTTPRequestHead, url: URL, host: String, id: String, context: ChannelHandlerContext) {
        var headers = HTTPHeaders(HopByHopHeaders.removed(from: head.headers))
        if streamID != nil { headers = ProxyHTTP2.joiningCookies(headers) }
        // The client's Expect is answered here, not sent on.
        let expectsContinue = headers.first(name: "Expect")?.lowercased() == "100-continue"
        headers.remove(name: "Expect")
        // The fields as the client wrote them (order, repeats, spelling): the engine carries
        // them so, and the NIO transport sends them so. `Host` where it stood, naming the target.
        // Upstream in the version the client chose: HTTP/2 (offered by ALPN) only for a client
        // that spoke it, so a server hears HTTP/1.1 from an HTTP/1.1 client, as it would direct.
        var request = RequestMessage(method: head.method.rawValue, url: url, headerFields: FieldMerge.fields(headers.lazy.map { field in
            HostField.isHost(field.name) ? (field.name, HostField.value(field.value, for: url)) : (field.name, field.value)
        }), allowsHTTP2: head.version.major >= 2)
        let length = head.headers.first(name: "Content-Length").flatMap(Int.init)
        let chunked = head.headers[canonicalForm: "Transfer-Encoding"].contains { $0.lowercased() == "chunked" }
        // An HTTP/2 stream ends with its answer, never the connection.
        let exchange = ProxyExchange(id: id, channel: context.channel, proxy: proxy, client: client, version: head.version,
                                     keepAlive: head.version.major >= 2 || head.isKeepAlive, isHead: head.method == .HEAD,
                                     host: host)
        self.exchange = exchange
        if expectsContinue, chunked || (length ?? 0) > 0 {
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .continue))), promise: nil)
        }
        if chunked || (length ?? 0) > 0 { headTimer?.bodyBegan() }
        // A gRPC call's messages come as the call goes (a client-streaming or bidirectional one
        // waits for answers before it sends more): its body streams from the start.
        let isCall = streamID != nil && head.headers.first(name: "content-type")?.lowercased().hasPrefix("application/grpc") == true
        if chunked || (length ?? 0) > Self.wholeBodyLimit || isCall {
            let upload = UploadStream(capacity: proxy.options.uploadBuffer, keeping: proxy.queue.events.bodyLimit)
            request.body = .stream(BodyStream(upload))
            receiving = .streaming(exchange, upload.buffer)
            exchange.start(request)
        } else {
            receiving = .collecting(exchange, context.channel.allocator.buffer(capacity: length ?? 0))
            exchange.prepare(request)
        }
    }

    private func receivedBody(_ part: ByteBuffer, context: ChannelHandlerContext) {
        switch receiving {
        case .collecting(let exchange, var body):
            receiving = .idle
            var part = part
            body.writeBuffer(&part)
            guard body.readableBytes > Self.wholeBodyLimit else {
                receiving = .collecting(exchange, body)
                return
            }
            // Longer than is read whole, with no length said (an HTTP/2 stream needs none):
            // it streams from here, what came so far first.
            let upload = UploadStream(capacity: proxy.options.uploadBuffer, keeping: proxy.queue.events.bodyLimit)
            receiving = .streaming(exchange, upload.buffer)
            receivedBody(body, context: context)
            exchange.startStreaming(upload)
        case .streaming(_, let upload):
            let channel = context.channel
            let room = upload.append(part) {
                channel.eventLoop.execute {
                    channel.setOption(ChannelOptions.autoRead, value: true).whenSuccess { channel.read() }
                }
            }
            if !room { context.channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in } }
        case .upgrade(let head, let url, let id, var body):
            receiving = .idle
            guard body.readableBytes + part.readableBytes <= Self.wholeBodyLimit else {
                return refuse(ProxyFailureAnswer(status: 413, errorType: "http_request_error",
                                                 message: "an upgrade request's body is kept whole, up to \(Self.wholeBodyLimit) bytes"),
                          head: head, id: id, context: context, close: true)
            }
            var part = part
            body.writeBuffer(&part)
            receiving = .upgrade(head, url, id: id, body: body)
        case .idle, .connect, .refused:
            break
        }
    }

    /// - Parameter trailers: the fields the client sent after its body (chunked trailers,
    ///   HTTP/2's trailing HEADERS), sent on after a streamed body's end.
    private func receivedEnd(trailers: HTTPHeaders?, context: ChannelHandlerContext) {
        headTimer?.requestEnded()
        let now = receiving
        receiving = .idle
        switch now {
        case .collecting(let exchange, let body) where trailers?.isEmpty == false:
            // Trailers go after a body as it streams (the transport ends it with them): what
            // was read whole goes out as a stream that has ended.
            let upload = UploadStream(capacity: max(proxy.options.uploadBuffer, body.readableBytes), keeping: proxy.queue.events.bodyLimit)
            _ = upload.buffer.append(body) {}
            upload.buffer.finish(trailers: trailers.map { HTTPFields($0, splitCookie: false) })
            exchange.startStreaming(upload)
            exchange.requestEnded()
        case .collecting(let exchange, let body):
            exchange.startPrepared(body: body.readableBytes > 0 ? Data(buffer: body) : nil)
        case .streaming(let exchange, let upload):
            upload.finish(trailers: trailers.flatMap { $0.isEmpty ? nil : HTTPFields($0, splitCookie: false) })
            exchange.requestEnded()
        case .upgrade(let head, let url, let id, let body):
            // The tunnel's row names its program: found before the row is made.
            let steps = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            client.whenFound { _ in
                steps.eventLoop.execute {
                    let (handler, context) = steps.value
                    // An HTTP/2 stream has no codec: its upgrade was refused as it came.
                    guard let codec = handler.codec?.with(handler) else { return }
                    ProxyUpgrade.start(head, body: body, url: url, id: id, proxy: handler.proxy, client: handler.client,
                                       codec: codec, context: context)
                }
            }
        case .connect(let host, let port, let id):
            let steps = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            client.whenFound { _ in
                steps.eventLoop.execute {
                    let (handler, context) = steps.value
                    // An HTTP/2 stream has no codec: its CONNECT was refused as it came (it has an origin).
                    guard let codec = handler.codec?.with(handler) else { return }
                    ProxyTunnel.connect(host: host, port: port, id: id, proxy: handler.proxy, connection: handler.connection, client: handler.client,
                                        codec: codec, context: context)
                }
            }
        case .idle, .refused:
            break
        }
    }

    // MARK: - Answers of the proxy's own

    private func refuseLoop(_ head: HTTPRequestHead, id: String, context: ChannelHandlerContext) {
        refuse(ProxyFailureAnswer(status: 508, errorType: "proxy_loop_detected", message: "the request is aimed at this proxy itself"),
               head: head, id: id, context: context, close: true)
    }

    /// Answers the request `head` (row `id`) with the proxy's own `answer`, sends nothing on,
    /// and shows it as a row of its own (``ProxyRefusalRow``).
    private func refuse(_ answer: ProxyFailureAnswer, extra: [(String, String)] = [], head: HTTPRequestHead, id: String,
                        context: ChannelHandlerContext, close: Bool) {
        receiving = .refused
        let (channel, request, events) = (context.channel, ProxyRefusalRow.Request(head, origin: origin), proxy.queue.events)
        let leftOut = proxy.takeRefusalRow()
        // Answered once the program is known, as a request is sent once it is: a client told
        // at once (a `curl` given its 407) may be gone before the lookup names it. Most often
        // it is known already, and this runs here and now.
        client.whenFound { program in
            if channel.eventLoop.inEventLoop {
                answer.send(on: channel, extra: extra, closing: close)
            } else {
                channel.eventLoop.execute { answer.send(on: channel, extra: extra, closing: close) }
            }
            guard let leftOut else { return }
            ProxyRefusalRow.publish(id: id, request: request, answer: answer, extra: extra, closing: close, leftOut: leftOut, program: program,
                                    events: events)
        }
    }

    // MARK: - The connection

    func channelInactive(context: ChannelHandlerContext) {
        // The exchange first: the upload's end can fail its operation at once, on this loop,
        // and its answer must find the client gone, not write to it.
        exchange?.clientWentAway()
        if case .streaming(_, let upload) = receiving { upload.finish(ProxyExchange.ClientGone()) }
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent, exchange?.isUnderWay != true {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A malformed request is answered here, saying what was wrong, unless an answer is
        // half written (a body that broke off after the upstream began to answer): NIO's
        // HTTPServerProtocolErrorHandler answered a bare 400, and was one handler more on
        // every connection. The pipelining handler holds a parse error back until the answer
        // before it has ended. TLS garbage and resets end the connection.
        if let malformed = error as? HTTPParserError, exchange?.answerIsHalfWritten != true {
            let answer = ProxyFailureAnswer(malformed: malformed)
            let open = context.channel.isActive
            answer.send(on: context.channel, closing: true)
            // Between requests, it was the head of a new one that could not be read: a row of
            // its own. In a request's body, that request's row tells it (its upload broke). A
            // head cut short by the connection's end (the client left, or the head's deadline
            // closed it) had no answer and is no row.
            if case .idle = receiving, open, let leftOut = proxy.takeRefusalRow() {
                requests += 1
                let (id, events) = ("c\(connection)-r\(requests)", proxy.queue.events)
                client.whenFound { program in
                    ProxyRefusalRow.publish(id: id, request: .unread, answer: answer, extra: [], closing: true, leftOut: leftOut, program: program,
                                            events: events)
                }
            }
        }
        exchange?.requestBroken()
        if case .streaming(_, let upload) = receiving { upload.finish(error) }
        receiving = .refused
        context.close(promise: nil)
    }
}
