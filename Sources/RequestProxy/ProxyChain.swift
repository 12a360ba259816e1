import ChannelGlue
import Foundation
import NIOCore
import NIOPosix
import RequestOperations

/// The proxy that `reqtop proxy` sends its own connections through (`--proxy`): its tunnels
/// and upgrades reach their hosts with a `CONNECT` to it, as its operations' requests do
/// through the upstream transport's proxy setting. Hosts it ``bypasses`` (`NO_PROXY`) are
/// reached directly, as the transport reaches them.
public struct ProxyChain: Sendable {
    public var host: String
    public var port: Int
    /// The `Proxy-Authorization` value the chained proxy is sent (`Basic …`, from its URL's
    /// `user:password`); never shown.
    public var authorization: String?
    /// Hosts reached without it.
    public var bypasses: @Sendable (String) -> Bool

    /// The chained proxy at `url` (`http://[user:password@]host[:port]`, port 80 by default, as
    /// the transport takes it). Nil when `url` has no host.
    public init?(url: URL, bypasses: @escaping @Sendable (String) -> Bool = { _ in false }) {
        guard let host = url.host, !host.isEmpty else { return nil }
        self.host = host
        self.port = url.port ?? 80
        self.bypasses = bypasses
        if let user = url.user {
            let pair = (user.removingPercentEncoding ?? user) + ":" + ((url.password?.removingPercentEncoding ?? url.password) ?? "")
            authorization = "Basic " + Data(pair.utf8).base64EncodedString()
        }
    }

    /// `host:port` of the chained proxy, for messages.
    public var name: String { HostAddress.authority(host, port: port) }
}

/// A TCP connection the proxy makes itself, for a tunnel or an upgrade: straight to its host,
/// or through the chained proxy with a `CONNECT`.
enum UpstreamConnection {
    /// The connection to `host:port` on `loop`, and the bytes the host sent right after the
    /// chained proxy's `200` (a server that speaks first); the caller installs its handlers,
    /// fires those bytes into the pipeline and turns reading on
    /// (``Opened/start(_:)``).
    struct Opened {
        let channel: Channel
        let early: ByteBuffer?

        /// Hands the early bytes to the handlers the caller installed and lets reading go on.
        func start() {
            if let early { channel.pipeline.fireChannelRead(early) }
            channel.setOption(ChannelOptions.autoRead, value: true).whenSuccess { channel.read() }
        }
    }

    static func open(host: String, port: Int, chain: ProxyChain?, on loop: EventLoop) -> EventLoopFuture<Opened> {
        let bootstrap = ClientBootstrap(group: loop)
            .channelOption(NoDelay.option, value: 1)
            .channelOption(.autoRead, value: false)
            .connectTimeout(.seconds(10))
        guard let chain, !chain.bypasses(host) else {
            return bootstrap.connect(host: host, port: port).map { Opened(channel: $0, early: nil) }
        }
        let authority = HostAddress.authority(host, port: port)
        return bootstrap.connect(host: chain.host, port: chain.port)
            .flatMapError { error in
                loop.makeFailedFuture(ChainFailure(message: "cannot connect to the chained proxy \(chain.name) (\(error))"))
            }
            .flatMap { channel -> EventLoopFuture<Opened> in
                let answered = channel.eventLoop.makePromise(of: ByteBuffer?.self)
                let handler = ChainedConnectHandler(authority: authority, authorization: chain.authorization, proxy: chain.name, answered: answered)
                do {
                    try channel.pipeline.syncOperations.addHandler(handler)
                } catch {
                    channel.close(promise: nil)
                    return channel.eventLoop.makeFailedFuture(error)
                }
                return answered.futureResult.map { Opened(channel: channel, early: $0) }.flatMapErrorThrowing { error in
                    channel.close(promise: nil)
                    throw error
                }
            }
    }
}

/// Why a connection through the chained proxy could not be made, in words.
struct ChainFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Sends `CONNECT authority` to the chained proxy and reads its answer's head: a 2xx opens the
/// tunnel (the handler leaves, reading stops, and bytes past the head are handed on with the
/// connection); anything else fails it with the proxy's status line.
final class ChainedConnectHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// A head longer than this is no proxy's answer to `CONNECT`.
    static let headLimit = 16 << 10
    /// A chained proxy that has not answered by then never will: the client gets its 502.
    static let answerTimeout = TimeAmount.seconds(10)

    private let request: String
    private let proxy: String
    private let answered: EventLoopPromise<ByteBuffer?>
    private var head = ByteBuffer()
    private var done = false
    private var timeout: Scheduled<Void>?

    init(authority: String, authorization: String?, proxy: String, answered: EventLoopPromise<ByteBuffer?>) {
        var request = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let authorization { request += "Proxy-Authorization: \(authorization)\r\n" }
        self.request = request + "\r\n"
        self.proxy = proxy
        self.answered = answered
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timeout = context.eventLoop.scheduleTask(in: Self.answerTimeout) {
            let (handler, context) = bound.value
            handler.fail(context, "the chained proxy \(handler.proxy) did not answer CONNECT in \(Self.answerTimeout.nanoseconds / 1_000_000_000) s")
        }
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: request)), promise: nil)
        context.read()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timeout?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var part = unwrapInboundIn(data)
        guard !done else { return context.fireChannelRead(data) }
        head.writeBuffer(&part)
        guard let end = Self.endOfHead(in: head) else {
            if head.readableBytes > Self.headLimit { return fail(context, "the chained proxy \(proxy) sent no answer to CONNECT in \(Self.headLimit) bytes") }
            // The rest of the head: reading is off until the caller's handlers are in.
            context.read()
            return
        }
        let text = head.getString(at: head.readerIndex, length: end) ?? ""
        let statusLine = text.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
        let words = statusLine.split(separator: " ", maxSplits: 2)
        guard words.count >= 2, words[0].hasPrefix("HTTP/1."), let status = Int(words[1]) else {
            return fail(context, "the chained proxy \(proxy) did not answer CONNECT in HTTP: \(statusLine.prefix(80))")
        }
        guard (200..<300).contains(status) else {
            return fail(context, "the chained proxy \(proxy) refused the tunnel: \(statusLine.prefix(120))")
        }
        done = true
        head.moveReaderIndex(forwardBy: end + 4)
        let early = head.readableBytes > 0 ? head : nil
        context.channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        answered.succeed(early)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done { fail(context, "the chained proxy \(proxy) closed the connection before answering CONNECT") }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if !done { fail(context, "the chained proxy \(proxy): \(error)") }
        context.fireErrorCaught(error)
    }

    private func fail(_ context: ChannelHandlerContext, _ message: String) {
        guard !done else { return }
        done = true
        timeout?.cancel()
        answered.fail(ChainFailure(message: message))
        context.close(promise: nil)
    }

    /// Where `\r\n\r\n` begins, counted from the reader index.
    private static func endOfHead(in buffer: ByteBuffer) -> Int? {
        let view = buffer.readableBytesView
        guard view.count >= 4 else { return nil }
        var index = view.startIndex
        while index <= view.endIndex - 4 {
            if view[index] == 13, view[index + 1] == 10, view[index + 2] == 13, view[index + 3] == 10 { return index - view.startIndex }
            index += 1
        }
        return nil
    }
}
