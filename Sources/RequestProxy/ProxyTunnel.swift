import ChannelGlue
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS

/// What a `CONNECT` becomes once the client was told `200`: bytes relayed both ways to the
/// upstream (``ProxyOptions/tunnels(_:)``: no authority, or a host passed through; or what the
/// client sends is not TLS: ``ConnectSniffer``), or TLS ended here with a leaf of the proxy's
/// authority and the requests inside run as operations.
/// And what an `Upgrade` request (a WebSocket) becomes: its head sent on to the upstream, then
/// bytes relayed both ways, the upstream's `101` first.
enum ProxyTunnel {
    /// - Parameter id: the `CONNECT`'s id: a passed-through tunnel's row.
    static func connect(host: String, port: Int, id: String, proxy: ProxyContext, connection: Int, client: ClientOrigin, codec: [RemovableChannelHandler],
                        context: ChannelHandlerContext) {
        let channel = context.channel
        let codec = NIOLoopBound(codec, eventLoop: channel.eventLoop)
        // Nothing is read while the pipeline changes: a byte of TLS must not reach the HTTP decoder.
        channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
        if proxy.options.tunnels(host) {
            connectUpstream(host: host, port: port, for: channel, proxy: proxy)
                .whenComplete { result in
                    switch result {
                    case .success(let upstream):
                        swapToBytes(channel, codec: codec.value, telling: ByteBuffer(string: "HTTP/1.1 200 Connection established\r\n\r\n")) {
                            let meter = TunnelMeter(id: id, method: "CONNECT", url: "https://\(authority(host, port))", headers: [:], origin: client.known,
                                                    events: proxy.queue.events, on: channel.eventLoop)
                            try join(channel, upstream, meter: meter, proxy: proxy)
                        }
                    case .failure(let error):
                        refuse(channel, cannotConnect(host, port, error))
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
        swapToBytes(channel, codec: codec.value, telling: ByteBuffer(string: "HTTP/1.1 200 Connection established\r\n\r\n")) {
            // TLS is ended here; anything else is relayed as it comes (ConnectSniffer).
            let sniffer = ConnectSniffer(intercept: { channel in
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                try ProxyConnectionHandler.install(on: channel, context: proxy, connection: connection, origin: origin, idle: false, client: client)
            }, relay: { channel, joined in
                relay(channel, to: host, port: port, id: id, proxy: proxy, client: client, joined: joined)
            })
            try channel.pipeline.syncOperations.addHandler(sniffer)
        }
    }

    /// A client told `200` whose first bytes are not TLS: connects to `host:port` and relays
    /// them as a tunnel row (`tcp://host:port`); `joined` says whether it could, on the
    /// client's event loop. A host that cannot be reached closes the client's connection (it
    /// was told `200` already), and the row says why.
    private static func relay(_ channel: Channel, to host: String, port: Int, id: String, proxy: ProxyContext, client: ClientOrigin,
                              joined: @escaping @Sendable (Bool) -> Void) {
        connectUpstream(host: host, port: port, for: channel, proxy: proxy)
            .whenComplete { result in
                let meter = TunnelMeter(id: id, method: "CONNECT", url: "tcp://\(authority(host, port))", headers: [:], origin: client.known,
                                        events: proxy.queue.events, on: channel.eventLoop)
                switch result {
                case .success(let upstream):
                    do {
                        try join(channel, upstream, meter: meter, proxy: proxy)
                        joined(true)
                    } catch {
                        meter.close(error)
                        upstream.channel.close(promise: nil)
                        joined(false)
                    }
                case .failure(let error):
                    meter.close(error)
                    joined(false)
                }
            }
    }

    /// A plain TCP connection to `host:port` for a tunnel of `client`'s, on its event loop:
    /// direct, or through the chained proxy (``ProxyOptions/chain``). Reading starts once the
    /// tunnel's handlers are in (``join(_:_:meter:proxy:)``).
    private static func connectUpstream(host: String, port: Int, for client: Channel, proxy: ProxyContext) -> EventLoopFuture<UpstreamConnection.Opened> {
        UpstreamConnection.open(host: host, port: port, chain: proxy.options.chain, on: client.eventLoop)
    }

    /// The 502 for a host that could not be reached, or a chained proxy that would not reach it.
    private static func cannotConnect(_ host: String, _ port: Int, _ error: Error) -> ProxyFailureAnswer {
        if let chained = error as? ChainFailure {
            return ProxyFailureAnswer(status: 502, errorType: "connection_refused", message: "cannot connect to \(host):\(port): \(chained.message)")
        }
        return ProxyFailureAnswer(status: 502, errorType: "connection_refused", message: "cannot connect to \(host):\(port) (\(error))")
    }

    /// `host:port`, an IPv6 address in brackets.
    private static func authority(_ host: String, _ port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Relays bytes both ways between the client's `channel` and `upstream` (both on one event
    /// loop), counted by `meter`'s row, which a person can cancel.
    private static func join(_ channel: Channel, _ upstream: UpstreamConnection.Opened, meter: TunnelMeter, proxy: ProxyContext) throws {
        let (client, server) = GlueHandler.matchedPair(meter: meter)
        try upstream.channel.pipeline.syncOperations.addHandler(server)
        try channel.pipeline.syncOperations.addHandler(client)
        meter.cancellable(in: proxy.queue.externalRows, closing: [channel, upstream.channel])
        upstream.start()
    }

    /// An `Upgrade` request to `url`: a connection to its host (TLS for https, verified as
    /// the proxy's requests are), the request's head written to it as the client sent it (less
    /// the proxy's own headers), and then bytes both ways. The upstream's answer (`101`, or a
    /// refusal) reaches the client as it came.
    static func upgrade(_ head: HTTPRequestHead, url: URL, id: String, proxy: ProxyContext, client origin: ClientOrigin, codec: [RemovableChannelHandler],
                        context: ChannelHandlerContext) {
        let channel = context.channel
        let codec = NIOLoopBound(codec, eventLoop: channel.eventLoop)
        channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
        guard let host = url.host else { return refuse(channel, ProxyFailureAnswer(status: 400, errorType: "http_request_error", message: "no host")) }
        let secure = url.scheme == "https"
        let port = url.port ?? (secure ? 443 : 80)
        let tls: NIOSSLContext?
        do {
            tls = secure ? try proxy.upstreamTLS() : nil
        } catch {
            return refuse(channel, ProxyFailureAnswer(status: 502, errorType: "tls_protocol_error", message: "the upstream TLS settings: \(error)"))
        }
        UpstreamConnection.open(host: host, port: port, chain: proxy.options.chain, on: channel.eventLoop)
            // With TLS, connected is when the handshake is done: a certificate the proxy
            // refuses is then a 502 that says so, not a connection closed after the swap.
            .flatMap { opened -> EventLoopFuture<UpstreamConnection.Opened> in
                guard let tls else { return opened.channel.eventLoop.makeSucceededFuture(opened) }
                let upstream = opened.channel
                let watch = HandshakeWatch(upstream.eventLoop.makePromise())
                do {
                    let sync = upstream.pipeline.syncOperations
                    try sync.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: IPAddressBytes(host) == nil ? host : nil))
                    try sync.addHandler(watch)
                } catch {
                    upstream.close(promise: nil)
                    return upstream.eventLoop.makeFailedFuture(UpgradeTLSFailure(error: error))
                }
                // The handshake reads (no server sends before a ClientHello: nothing comes early).
                opened.start()
                return watch.done.futureResult.map { UpstreamConnection.Opened(channel: upstream, early: nil) }.flatMapErrorThrowing { error in
                    upstream.close(promise: nil)
                    throw UpgradeTLSFailure(error: error)
                }
            }
            .hop(to: channel.eventLoop)
            .whenComplete { result in
                switch result {
                case .failure(let failure as UpgradeTLSFailure):
                    let refused = "\(failure.error)".contains("CERTIFICATE_VERIFY_FAILED")
                    refuse(channel, ProxyFailureAnswer(status: 502, errorType: refused ? "tls_certificate_error" : "tls_protocol_error",
                                                       message: "TLS to \(host):\(port) failed\(refused ? " (its certificate was refused)" : ""): \(failure.error)"))
                case .success(let upstream):
                    upstream.channel.writeAndFlush(requestHead(head, url: url), promise: nil)
                    swapToBytes(channel, codec: codec.value, telling: nil) {
                        var headers: [String: String] = [:]
                        for (name, value) in head.headers where !name.lowercased().hasPrefix("proxy-") {
                            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
                        }
                        let meter = TunnelMeter(id: id, method: head.method.rawValue, url: url.absoluteString, headers: headers, origin: origin.known,
                                                events: proxy.queue.events, on: channel.eventLoop)
                        try join(channel, upstream, meter: meter, proxy: proxy)
                    }
                case .failure(let error):
                    refuse(channel, cannotConnect(host, port, error))
                }
            }
    }

    /// The head as the upstream takes it: origin-form target, the client's headers less the
    /// proxy's own (`Proxy-*`), `Upgrade` and `Connection` kept (they are what is asked).
    private static func requestHead(_ head: HTTPRequestHead, url: URL) -> ByteBuffer {
        // As sent, percent-encoded: `url.path` decodes `%0d%0a`, which would end the request
        // line and let a client write headers of its own choosing to the upstream.
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        var target = components?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        var text = "\(head.method.rawValue) \(target) HTTP/1.1\r\n"
        for (name, value) in head.headers where !name.lowercased().hasPrefix("proxy-") {
            text += "\(name): \(value)\r\n"
        }
        return ByteBuffer(string: text + "\r\n")
    }

    /// Takes the HTTP handlers out, writes `telling` to the client (the tunnel's `200`; nil
    /// for an upgrade, whose answer is the upstream's), adds `next`'s handlers, and reads on.
    /// The `200` is written as bytes: NIO's encoder would frame it as a chunked body, whose
    /// last chunk the client would read as the first bytes of the tunnel.
    private static func swapToBytes(_ channel: Channel, codec: [RemovableChannelHandler], telling: ByteBuffer?, then next: @escaping () throws -> Void) {
        let sync = channel.pipeline.syncOperations
        // The decoder stays until the new handlers are in: bytes it read past the head go on to them.
        let decoder = codec[codec.count - 2]
        for handler in codec.dropLast(2) + [codec.last!] { sync.removeHandler(handler, promise: nil) }
        let steps = NIOLoopBound((decoder, next), eventLoop: channel.eventLoop)
        let told = telling.map { channel.writeAndFlush($0) } ?? channel.eventLoop.makeSucceededVoidFuture()
        told.whenComplete { result in
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
        answer.send(on: channel, closing: true)
    }
}

/// Why a tunnel's TLS to the upstream failed (the handshake's error).
struct UpgradeTLSFailure: Error {
    let error: Error
}

/// Completes `done` when the upstream's TLS handshake is over, or failed; then stays out of
/// the way (everything else passes through).
final class HandshakeWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    let done: EventLoopPromise<Void>
    /// `done` is completed once, by whichever comes first.
    private var told = false

    init(_ done: EventLoopPromise<Void>) {
        self.done = done
    }

    private func tell(_ result: Result<Void, Error>) {
        guard !told else { return }
        told = true
        done.completeWith(result)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted? = event as? TLSUserEvent { tell(.success(())) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        tell(.failure(error))
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        tell(.failure(ChannelError.ioOnClosedChannel))
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        tell(.failure(ChannelError.ioOnClosedChannel))
    }
}
