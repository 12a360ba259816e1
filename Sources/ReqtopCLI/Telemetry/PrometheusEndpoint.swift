import Foundation
import ReqtopApplication
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus
import Synchronization

/// `GET /metrics` in Prometheus' text format (swift-prometheus renders it), for `--metrics`.
/// A few lines of SwiftNIO rather than a web framework: one route, read only.
///
/// Bounded against clients that connect and never ask (19,000 idle connections were held
/// before, and with descriptors exhausted `reqtop attach` got no answer): at most
/// ``maxConnections`` at once (more are closed as they come), and a connection that sends
/// nothing for ``idleTimeout`` is closed. The first time either happens the program says so
/// on stderr, once.
final class PrometheusEndpoint: Sendable {
    static let defaultMaxConnections = 64
    static let defaultIdleTimeout = TimeAmount.seconds(30)

    let registry: PrometheusCollectorRegistry
    let port: Int
    let host: String
    let maxConnections: Int
    private let channel: any Channel
    private let open: OpenCount

    /// Listens on `host:port` (port 0: a free one). Blocks until it listens.
    init(host: String, port: Int, registry: PrometheusCollectorRegistry, maxConnections: Int = defaultMaxConnections,
         idleTimeout: TimeAmount = defaultIdleTimeout, notice: @escaping @Sendable (String) -> Void = PrometheusEndpoint.printNotice) throws {
        self.registry = registry
        self.maxConnections = maxConnections
        let open = OpenCount(notice: notice)
        self.open = open
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                guard open.admit(limit: maxConnections) else {
                    open.say("--metrics: more than \(maxConnections) connections at once; closing the newest (said once)")
                    return channel.close()
                }
                channel.closeFuture.whenComplete { _ in open.closed() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: idleTimeout))
                    try channel.pipeline.syncOperations.addHandler(IdleCloser(open: open, idleTimeout: idleTimeout))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(MetricsHandler(registry: registry))
                }
            }
        channel = try bootstrap.bind(host: host, port: port).wait()
        self.host = host
        self.port = channel.localAddress?.port ?? port
    }

    /// Connections open now.
    var openConnections: Int { open.count }

    func stop() {
        try? channel.close().wait()
    }

    static func printNotice(_ text: String) {
        FileHandle.standardError.write(Data(("reqtop: " + text + "\n").utf8))
    }
}

/// The endpoint's open connections, and whether its one notice was given.
private final class OpenCount: Sendable {
    private let state = Mutex((open: 0, said: false))
    private let notice: @Sendable (String) -> Void

    init(notice: @escaping @Sendable (String) -> Void) {
        self.notice = notice
    }

    var count: Int { state.withLock { $0.open } }

    func admit(limit: Int) -> Bool {
        state.withLock { state in
            guard state.open < limit else { return false }
            state.open += 1
            return true
        }
    }

    func closed() {
        state.withLock { $0.open -= 1 }
    }

    /// Gives the notice the first time only: a flood must not flood stderr too.
    func say(_ text: String) {
        let first = state.withLock { state -> Bool in
            defer { state.said = true }
            return !state.said
        }
        if first { notice(text) }
    }
}

/// Closes a connection that sent nothing for the idle timeout.
private final class IdleCloser: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let open: OpenCount
    let idleTimeout: TimeAmount

    init(open: OpenCount, idleTimeout: TimeAmount) {
        self.open = open
        self.idleTimeout = idleTimeout
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        open.say("--metrics: closing connections idle for \(idleTimeout.nanoseconds / 1_000_000_000) s (said once)")
        context.close(promise: nil)
    }
}

private final class MetricsHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    let registry: PrometheusCollectorRegistry

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let request) = unwrapInboundIn(data) else { return }
        let path = request.uri.split(separator: "?").first.map(String.init) ?? request.uri
        let (status, type, body): (HTTPResponseStatus, String, [UInt8]) = switch (request.method, path) {
        case (.GET, "/metrics"): (.ok, "text/plain; version=0.0.4; charset=utf-8", registry.emitToBuffer())
        case (_, "/metrics"): (.methodNotAllowed, "text/plain; charset=utf-8", Array("GET only\n".utf8))
        default: (.notFound, "text/plain; charset=utf-8", Array("reqtop serves /metrics only\n".utf8))
        }
        var head = HTTPResponseHead(version: request.version, status: status)
        head.headers.add(name: "Content-Type", value: type)
        head.headers.add(name: "Content-Length", value: "\(body.count)")
        var buffer = context.channel.allocator.buffer(capacity: body.count)
        buffer.writeBytes(body)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
