import CertificateMint
import ChannelGlue
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import RequestOperations
import RequestTransportNIO

/// An `Upgrade` request (a WebSocket): a connection to its host (TLS for https, verified as
/// the proxy's requests are), the request sent on as the client sent it (less the proxy's own
/// headers, with its body), and the upstream's answer read as HTTP. A `101` turns both
/// connections into one relay of bytes (``ProxyTunnel/join(_:_:meter:proxy:)``); any other
/// answer is passed to the client as an answer, and the connection closed after it — never a
/// relay, which would carry the client's later requests past the monitor and `--auth`.
enum ProxyUpgrade {
    /// - Parameters:
    ///   - body: the request's body, read whole (an upgrade's is small; most have none).
    ///   - codec: the client connection's HTTP handlers, taken out for the relay.
    static func start(_ head: HTTPRequestHead, body: ByteBuffer?, url: URL, id: String, proxy: ProxyContext, client origin: ClientOrigin,
                      codec: ClientCodec, context: ChannelHandlerContext) {
        let channel = context.channel
        let codec = NIOLoopBound(codec, eventLoop: channel.eventLoop)
        channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
        guard let host = url.host else {
            return ProxyTunnel.refuse(channel, ProxyFailureAnswer(status: 400, errorType: "http_request_error", message: "no host"))
        }
        let secure = url.scheme == "https"
        let port = url.port ?? (secure ? 443 : 80)
        let tls: NIOSSLContext?
        do {
            tls = secure ? try proxy.upstreamTLS() : nil
        } catch {
            return ProxyTunnel.refuse(channel, ProxyFailureAnswer(status: 502, errorType: "tls_protocol_error", message: "the upstream TLS settings: \(error)"))
        }
        UpstreamConnection.open(host: host, port: port, chain: proxy.options.chain, on: channel.eventLoop)
            .flatMap { opened in secured(opened, host: host, tls: tls) }
            .hop(to: channel.eventLoop)
            .whenComplete { result in
                switch result {
                case .failure(let failure as UpgradeTLSFailure):
                    // Read by kind from BoringSSL's codes, as the operations' TLS failures are.
                    let kind = NIOTLSFailureReading.failure(failure.error, sentClientCertificate: false)
                    let refused = kind == .untrusted || kind == .wrongHost
                    ProxyTunnel.refuse(channel, ProxyFailureAnswer(status: 502, errorType: refused ? "tls_certificate_error" : "tls_protocol_error",
                                                                   message: "TLS to \(HostAddress.authority(host, port: port)) failed"
                                                                       + (kind.map { ": \($0.summary)" } ?? "")))
                case .failure(let error):
                    ProxyTunnel.refuse(channel, ProxyTunnel.cannotConnect(host, port, error))
                case .success(let upstream):
                    let headers = head.headers.joinedByName { $0.lowercased().hasPrefix("proxy-") }
                    let meter = TunnelMeter(id: id, method: head.method.rawValue, url: url.absoluteString, headers: headers, origin: origin.known,
                                            events: proxy.queue.events, on: channel.eventLoop)
                    let answer = UpgradeAnswer(client: channel, upstream: upstream.channel, codec: codec.value, meter: meter, proxy: proxy)
                    do {
                        let sync = upstream.channel.pipeline.syncOperations
                        try sync.addHandler(answer.encoder)
                        try sync.addHandler(answer.decoder)
                        try sync.addHandler(answer)
                    } catch {
                        meter.close(error)
                        upstream.channel.close(promise: nil)
                        return ProxyTunnel.refuse(channel, ProxyTunnel.cannotConnect(host, port, error))
                    }
                    upstream.channel.write(HTTPClientRequestPart.head(outgoing(head, url: url)), promise: nil)
                    if let body, body.readableBytes > 0 { upstream.channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
                    upstream.channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
                    upstream.start()
                }
            }
    }

    /// With TLS, connected is when the handshake is done: a certificate the proxy refuses is
    /// then a 502 that says so, not a connection closed after the swap.
    private static func secured(_ opened: UpstreamConnection.Opened, host: String, tls: NIOSSLContext?) -> EventLoopFuture<UpstreamConnection.Opened> {
        guard let tls else { return opened.channel.eventLoop.makeSucceededFuture(opened) }
        let upstream = opened.channel
        let watch = HandshakeWatch(upstream.eventLoop.makePromise())
        do {
            let sync = upstream.pipeline.syncOperations
            try sync.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: CertificateMint.addressBytes(host) == nil ? host : nil))
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

    /// The head as the upstream takes it: origin-form target, the client's headers in their
    /// order and spelling less the proxy's own (`Proxy-*`), `Upgrade` and `Connection` kept
    /// (they are what is asked); `Host` where it stood, naming the target (``HostField``), or
    /// the target's after the rest when the client sent none.
    static func outgoing(_ head: HTTPRequestHead, url: URL) -> HTTPRequestHead {
        // As sent, percent-encoded: `url.path` decodes `%0d%0a`, which would end the request
        // line and let a client write headers of its own choosing to the upstream.
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        var target = components?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        var headers = HTTPHeaders(head.headers.compactMap { field -> (String, String)? in
            if field.name.lowercased().hasPrefix("proxy-") { return nil }
            return HostField.isHost(field.name) ? (field.name, HostField.value(field.value, for: url)) : (field.name, field.value)
        })
        if !headers.contains(name: "Host") { headers.add(name: "Host", value: HostAddress.hostField(for: url)) }
        return HTTPRequestHead(version: .http1_1, method: head.method, uri: target, headers: headers)
    }
}

/// The upstream's answer to an upgrade request, read on the upstream's channel (the client's
/// event loop): a `101` joins the two connections; anything else is written to the client as
/// an answer, which then closes.
final class UpgradeAnswer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    let encoder = HTTPRequestEncoder()
    let decoder = ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .forwardBytes))
    private let client: Channel
    private let upstream: Channel
    private let codec: ClientCodec
    private let meter: TunnelMeter
    private let proxy: ProxyContext
    private var state = State.awaiting

    private enum State {
        /// No answer yet (or only a 1xx other than 101).
        case awaiting
        /// A 101 came; its end joins the connections.
        case switching(HTTPResponseHead)
        /// Another answer, passed to the client.
        case relaying
        /// Joined, or the answer passed on whole: nothing more of this handler's.
        case done
    }

    init(client: Channel, upstream: Channel, codec: ClientCodec, meter: TunnelMeter, proxy: ProxyContext) {
        (self.client, self.upstream, self.codec, self.meter, self.proxy) = (client, upstream, codec, meter, proxy)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head) where head.status == .switchingProtocols:
            state = .switching(head)
            meter.answered(status: 101, headers: head.headers, keeping: proxy.options.operation.responseBodyCap)
        case .head(let head) where head.status.code < 200:
            // 100 Continue and the like: the final answer follows.
            break
        case .head(var head):
            state = .relaying
            meter.answered(status: Int(head.status.code), headers: head.headers)
            head.headers.replaceOrAdd(name: "Connection", value: "close")
            client.write(HTTPServerResponsePart.head(head), promise: nil)
        case .body(let part):
            guard case .relaying = state else { return }
            meter.countDown(part.readableBytes)
            client.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(part)), promise: nil)
        case .end:
            if case .switching(let head) = state {
                state = .done
                return join(context, head)
            }
            guard case .relaying = state else { return }
            state = .done
            let (client, upstream) = (self.client, self.upstream)
            let meter = NIOLoopBound(self.meter, eventLoop: client.eventLoop)
            client.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { _ in
                meter.value.close(nil)
                client.close(promise: nil)
                upstream.close(promise: nil)
            }
        }
    }

    /// The `101` came whole: it is written to the client as it came, and both connections
    /// become one relay; bytes the upstream sent behind it go on to the client.
    private func join(_ context: ChannelHandlerContext, _ head: HTTPResponseHead) {
        var text = "HTTP/\(head.version.major).\(head.version.minor) \(head.status.code) \(head.status.reasonPhrase)\r\n"
        for (name, value) in head.headers { text += "\(name): \(value)\r\n" }
        let (upstream, meter, proxy, encoder, decoder) = (self.upstream, self.meter, self.proxy, self.encoder, self.decoder)
        let sync = upstream.pipeline.syncOperations
        sync.removeHandler(self, promise: nil)
        sync.removeHandler(encoder, promise: nil)
        ProxyTunnel.swapToBytes(client, codec: codec, telling: ByteBuffer(string: text + "\r\n")) { [client] in
            try ProxyTunnel.join(client, UpstreamConnection.Opened(channel: upstream, early: nil), meter: meter, proxy: proxy)
            // What the decoder holds past the 101 goes on to the relay as it leaves.
            upstream.pipeline.syncOperations.removeHandler(decoder, promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        ended(ChannelError.eof, ProxyFailureAnswer(status: 502, errorType: "connection_terminated",
                                                   message: "the upstream closed the connection before it answered the upgrade"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        ended(error, ProxyFailureAnswer(status: 502, errorType: "http_protocol_error", message: "the upstream's answer to the upgrade could not be read"))
        context.close(promise: nil)
    }

    /// The upstream went away, or sent what is not HTTP, before its answer was whole: a 502
    /// when nothing was passed on yet, else the client's connection cut short.
    private func ended(_ error: Error, _ answer: ProxyFailureAnswer) {
        let before = state
        state = .done
        switch before {
        case .awaiting, .switching:
            meter.close(error)
            ProxyTunnel.refuse(client, answer)
        case .relaying:
            meter.close(error)
            client.close(promise: nil)
        case .done:
            break
        }
    }
}
