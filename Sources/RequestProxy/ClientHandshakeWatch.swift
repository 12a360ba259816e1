import NIOCore
import NIOSSL
import NIOTLS
import RequestOperations

/// Watches the TLS handshake of an intercepted tunnel from the client's side: a client that
/// refuses the proxy's certificate (it does not trust reqtop's authority, or it pins its
/// server's own) ends the handshake with an alert or a close, and would otherwise leave no
/// trace — a person saw nothing at all, the connection's requests just never came. Such a
/// tunnel becomes a failed row (`CONNECT https://host:port`, the reason in words), and the
/// proxy's ``ProxyOptions/onClientRefusal`` is told once per host.
/// After the handshake it leaves the pipeline.
final class ClientHandshakeWatch: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let host: String
    private let port: Int
    private let id: String
    private let proxy: ProxyContext
    private let client: ClientOrigin
    private var failure: Error?
    private var told = false

    init(host: String, port: Int, id: String, proxy: ProxyContext, client: ClientOrigin) {
        (self.host, self.port, self.id, self.proxy, self.client) = (host, port, id, proxy, client)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted? = event as? TLSUserEvent {
            told = true
            context.fireUserInboundEventTriggered(event)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if failure == nil { failure = error }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !told {
            told = true
            refused(on: context.eventLoop)
        }
        context.fireChannelInactive()
    }

    /// The handshake ended without completing: a row that says why, and the notice.
    private func refused(on loop: EventLoop) {
        let words = "\(failure.map { "\($0)" } ?? "")"
        let alert = ["UNKNOWN_CA", "BAD_CERTIFICATE", "CERTIFICATE_UNKNOWN", "UNSUPPORTED_CERTIFICATE", "DECRYPT_ERROR", "ACCESS_DENIED"]
            .first { words.contains($0) }
        let how = alert.map { "refused the proxy's certificate for \(host) (TLS alert \($0.lowercased()))" }
            ?? "closed the connection during the TLS handshake with the proxy's certificate for \(host)"
        let reason = "the client \(how): it does not trust reqtop's authority (reqtop proxy --ca says how to), "
            + "or it pins its server's certificate (--tunnel \(host) passes it through undecrypted)"
        let authority = HostAddress.authority(host, port: port)
        let meter = TunnelMeter(id: id, method: "CONNECT", url: "https://\(authority)", headers: [:], origin: client.known,
                                events: proxy.queue.events, on: loop)
        meter.refused(reason: reason)
        proxy.toldOfRefusal(host: host, program: client.known, reason: reason)
    }
}
