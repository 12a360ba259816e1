import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// What a `CONNECT` becomes once the client was told `200`: bytes relayed both ways to the
/// upstream (``ProxyOptions/tunnels(_:)``: no authority, or a host passed through), or TLS
/// ended here with a leaf of the proxy's authority and the requests inside run as operations.
enum ProxyTunnel {
    static func connect(host: String, port: Int, proxy: ProxyContext, connection: Int, client: ClientOrigin, codec: [RemovableChannelHandler],
                        context: ChannelHandlerContext) {
        let channel = context.channel
        let codec = NIOLoopBound(codec, eventLoop: channel.eventLoop)
        // Nothing is read while the pipeline changes: a byte of TLS must not reach the HTTP decoder.
        channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
        if proxy.options.tunnels(host) {
            ClientBootstrap(group: channel.eventLoop)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(10))
                .connect(host: host, port: port)
                .hop(to: channel.eventLoop)
                .whenComplete { result in
                    switch result {
                    case .success(let upstream):
                        established(channel, codec: codec.value) {
                            let (client, server) = GlueHandler.matchedPair()
                            try channel.pipeline.syncOperations.addHandler(client)
                            try upstream.pipeline.syncOperations.addHandler(server)
                        }
                    case .failure(let error):
                        let answer = ProxyFailureAnswer(status: 502, errorType: "connection_refused",
                                                        message: "cannot connect to \(host):\(port) (\(error))")
                        refuse(channel, answer)
                    }
                }
            return
        }
        let tls: NIOSSLContext
        do {
            tls = try proxy.options.authority!.serverContext(for: host)
        } catch {
            return refuse(channel, ProxyFailureAnswer(status: 502, errorType: "proxy_internal_error", message: "cannot make a certificate for \(host): \(error)"))
        }
        let origin = URL(string: "https://\(host.contains(":") ? "[\(host)]" : host)\(port == 443 ? "" : ":\(port)")")!
        established(channel, codec: codec.value) {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
            try ProxyConnectionHandler.install(on: channel, context: proxy, connection: connection, origin: origin, idle: false, client: client)
        }
    }

    /// Takes the HTTP handlers out, tells the client the tunnel is up, adds `next`'s, and reads on.
    /// The `200` is written as bytes: NIO's encoder would frame it as a chunked body, whose
    /// last chunk the client would read as the first bytes of the tunnel.
    private static func established(_ channel: Channel, codec: [RemovableChannelHandler], then next: @escaping () throws -> Void) {
        let sync = channel.pipeline.syncOperations
        // The decoder stays until the new handlers are in: bytes it read past the CONNECT go on to them.
        let decoder = codec[codec.count - 2]
        for handler in codec.dropLast(2) + [codec.last!] { sync.removeHandler(handler, promise: nil) }
        let steps = NIOLoopBound((decoder, next), eventLoop: channel.eventLoop)
        channel.writeAndFlush(ByteBuffer(string: "HTTP/1.1 200 Connection established\r\n\r\n")).whenComplete { result in
            guard case .success = result else { return channel.close(promise: nil) }
            let (decoder, next) = steps.value
            do {
                try next()
                channel.pipeline.syncOperations.removeHandler(decoder, promise: nil)
                channel.setOption(ChannelOptions.autoRead, value: true).whenSuccess { channel.read() }
            } catch {
                channel.close(promise: nil)
            }
        }
    }

    private static func refuse(_ channel: Channel, _ answer: ProxyFailureAnswer) {
        var headers = HTTPHeaders(answer.headers)
        headers.add(name: "Connection", value: "close")
        channel.write(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: answer.status), headers: headers)), promise: nil)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: answer.body))), promise: nil)
        channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { _ in channel.close(promise: nil) }
    }
}
