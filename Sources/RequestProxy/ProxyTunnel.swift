import ChannelGlue
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
import RequestOperations

/// What a `CONNECT` becomes once the client was told `200`: bytes relayed both ways to the
/// upstream (``ProxyOptions/tunnels(_:)``: no authority, or a host passed through; or what the
/// client sends is not TLS: ``ConnectSniffer``), or TLS ended here with a leaf of the proxy's
/// authority and the requests inside run as operations.
/// (An `Upgrade` request is ``ProxyUpgrade``'s, which ends in the same relay.)
enum ProxyTunnel {
    /// - Parameter id: the `CONNECT`'s id: a passed-through tunnel's row.
    static func connect(host: String, port: Int, id: String, proxy: ProxyContext, connection: Int, client: ClientOrigin, codec: ClientCodec,
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
            tls = try proxy.options.authority!.serverContext(for: host, protocols: proxy.options.offersHTTP2 ? ProxyHTTP2.offered : ["http/1.1"])
        } catch {
            return refuse(channel, ProxyFailureAnswer(status: 502, errorType: "proxy_internal_error", message: "cannot make a certificate for \(host): \(error)"))
        }
        let origin = URL(string: "https://\(HostAddress.bracketed(host))\(port == 443 ? "" : ":\(port)")")!
        swapToBytes(channel, codec: codec.value, telling: ByteBuffer(string: "HTTP/1.1 200 Connection established\r\n\r\n")) {
            // TLS is ended here, plain HTTP read as it is; anything else is relayed as it comes (ConnectSniffer).
            let plainOrigin = URL(string: "http://\(authority(host, port))")!
            let sniffer = ConnectSniffer(intercept: { channel in
                try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                try channel.pipeline.syncOperations.addHandler(ClientHandshakeWatch(host: host, port: port, id: id, proxy: proxy, client: client))
                // HTTP/2 or HTTP/1.1, as the client chose by ALPN.
                try ProxyHTTP2.negotiate(on: channel, http1: { channel in
                    try ProxyConnectionHandler.install(on: channel, context: proxy, connection: connection, origin: origin, idle: false, client: client)
                }, http2: { channel in
                    try ProxyHTTP2.install(on: channel, context: proxy, connection: connection, origin: origin, client: client)
                })
            }, plainHTTP: { channel in
                try ProxyConnectionHandler.install(on: channel, context: proxy, connection: connection, origin: plainOrigin, idle: false, client: client)
            }, plainHTTP2: proxy.options.offersHTTP2 ? { channel in
                try ProxyHTTP2.install(on: channel, context: proxy, connection: connection, origin: plainOrigin, client: client)
            } : nil, relay: { channel, joined in
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
    static func cannotConnect(_ host: String, _ port: Int, _ error: Error) -> ProxyFailureAnswer {
        if let chained = error as? ChainFailure {
            return ProxyFailureAnswer(status: 502, errorType: "connection_refused", message: "cannot connect to \(host):\(port): \(chained.message)")
        }
        return ProxyFailureAnswer(status: 502, errorType: "connection_refused", message: "cannot connect to \(host):\(port) (\(error))")
    }

    /// `host:port`, an IPv6 address in brackets.
    private static func authority(_ host: String, _ port: Int) -> String {
        HostAddress.authority(host, port: port)
    }

    /// Relays bytes both ways between the client's `channel` and `upstream` (both on one event
    /// loop), counted by `meter`'s row, which a person can cancel.
    static func join(_ channel: Channel, _ upstream: UpstreamConnection.Opened, meter: TunnelMeter, proxy: ProxyContext) throws {
        let (client, server) = GlueHandler.matchedPair(meter: meter)
        try upstream.channel.pipeline.syncOperations.addHandler(server)
        try channel.pipeline.syncOperations.addHandler(client)
        meter.cancellable(in: proxy.queue.externalRows, closing: [channel, upstream.channel])
        upstream.start()
    }

    /// Takes the HTTP handlers out, writes `telling` to the client (the tunnel's `200`; nil
    /// for an upgrade, whose answer is the upstream's), adds `next`'s handlers, and reads on.
    /// The `200` is written as bytes: NIO's encoder would frame it as a chunked body, whose
    /// last chunk the client would read as the first bytes of the tunnel.
    static func swapToBytes(_ channel: Channel, codec: ClientCodec, telling: ByteBuffer?, then next: @escaping () throws -> Void) {
        let sync = channel.pipeline.syncOperations
        // The decoder stays until the new handlers are in: bytes it read past the head go on to them.
        for handler in codec.others { sync.removeHandler(handler, promise: nil) }
        let steps = NIOLoopBound((codec.decoder, next), eventLoop: channel.eventLoop)
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

    static func refuse(_ channel: Channel, _ answer: ProxyFailureAnswer) {
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
