import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus

/// `GET /metrics` in Prometheus' text format (swift-prometheus renders it), for `--metrics`.
/// A few lines of SwiftNIO rather than a web framework: one route, read only.
final class PrometheusEndpoint: Sendable {
    let registry: PrometheusCollectorRegistry
    let port: Int
    let host: String
    private let channel: any Channel

    /// Listens on `host:port` (port 0: a free one). Blocks until it listens.
    init(host: String, port: Int, registry: PrometheusCollectorRegistry) throws {
        self.registry = registry
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(MetricsHandler(registry: registry))
                }
            }
        channel = try bootstrap.bind(host: host, port: port).wait()
        self.host = host
        self.port = channel.localAddress?.port ?? port
    }

    func stop() {
        try? channel.close().wait()
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
