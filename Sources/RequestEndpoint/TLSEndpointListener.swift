#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ChannelGlue
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// The endpoint's TCP side: SwiftNIO accepts, swift-nio-ssl does mutual TLS, and each peer
/// whose certificate passed is handed to the endpoint as one end of a socket pair, glued to
/// its TLS channel (``GlueHandler``). The endpoint's I/O thread then serves it as it serves a
/// Unix socket: the same protocol, buffer limit and resync. One event-loop thread: a peer
/// that floods or stalls costs that thread, never the program's requests.
final class TLSEndpointListener: Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let channel: Channel
    /// Connections in their TLS handshake, and remote monitors attached, now.
    private let counts: ConnectionCounts
    let port: Int

    init(_ settings: EndpointTLS, endpoint: MonitorEndpoint) throws {
        let context = try NIOSSLContext(configuration: try settings.serverConfiguration())
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let counts = ConnectionCounts()
        let notice = endpoint.options.notice
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.so_keepalive), value: 1)
            .childChannelInitializer { [weak endpoint] channel in
                guard let endpoint else { return channel.close() }
                // Handshakes under way are bounded apart from monitors attached: a flood of
                // connections that never finish theirs is closed, and cannot hold the places
                // of the monitors that did.
                guard counts.handshaking.wrappingAdd(1, ordering: .relaxed).newValue <= settings.maxHandshakes else {
                    counts.handshaking.wrappingSubtract(1, ordering: .relaxed)
                    counts.turnedAway(notice, "turned away connections: \(settings.maxHandshakes) TLS handshakes under way already (said once)")
                    return channel.close()
                }
                Self.detectDeadPeers(channel, after: settings.deadPeerTimeout)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.addHandler(RemotePeerHandler(endpoint: endpoint, settings: settings, counts: counts))
                }
            }
        do {
            channel = try bootstrap.bind(host: settings.host, port: settings.port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw EndpointTLSError("cannot listen on \(settings.host):\(settings.port): \(error)")
        }
        port = channel.localAddress?.port ?? settings.port
        self.group = group
        self.counts = counts
    }

    /// Remote monitors attached now.
    var remoteMonitors: Int { counts.attached.load(ordering: .relaxed) }

    func stop() {
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }

    static func address(of channel: Channel) -> String {
        channel.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "an unknown address"
    }

    /// TCP keepalive on an idle connection (probes after a third of the limit, three of them)
    /// and a limit on unacknowledged writes: a cut network ends the connection, and the
    /// monitor's faults with it, within about `timeout`.
    static func detectDeadPeers(_ channel: Channel, after timeout: TimeInterval) {
        #if os(Linux)
        let seconds = max(1, Int(timeout / 3))
        func tcp(_ name: Int32, _ value: Int) {
            _ = channel.setOption(ChannelOptions.Types.SocketOption(level: SocketOptionLevel(IPPROTO_TCP), name: name), value: value)
        }
        tcp(TCP_KEEPIDLE, seconds)
        tcp(TCP_KEEPINTVL, max(1, seconds / 3))
        tcp(TCP_KEEPCNT, 3)
        tcp(Int32(TCP_USER_TIMEOUT), Int(timeout * 1000))
        #endif
    }
}

/// Counts shared by the accepting closure and each connection's handler.
private final class ConnectionCounts: Sendable {
    let handshaking = Atomic<Int>(0)
    let attached = Atomic<Int>(0)
    private let saidTurnedAway = Atomic<Bool>(false)

    /// A flood is said once on the log, not once a connection.
    func turnedAway(_ notice: @Sendable (String) -> Void, _ text: String) {
        if !saidTurnedAway.exchange(true, ordering: .relaxed) { notice(text) }
    }
}

/// Waits for the handshake, then hands the peer to the endpoint; closes a connection whose
/// handshake does not finish in time or fails (said on the program's log, by reason).
private final class RemotePeerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private weak var endpoint: MonitorEndpoint?
    private let settings: EndpointTLS
    private var handshakeTimer: Scheduled<Void>?
    private var attached = false
    private let counts: ConnectionCounts
    /// Which count this connection is in now.
    private var counted = Counted.handshaking

    private enum Counted { case handshaking, attached, none }

    init(endpoint: MonitorEndpoint, settings: EndpointTLS, counts: ConnectionCounts) {
        self.endpoint = endpoint
        self.settings = settings
        self.counts = counts
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        let address = TLSEndpointListener.address(of: channel)
        let notice = endpoint?.options.notice
        let limit = settings.handshakeTimeout
        handshakeTimer = context.eventLoop.scheduleTask(in: .milliseconds(Int64(limit * 1000))) {
            notice?("closed a connection from \(address): no TLS handshake within \(limit.formatted()) s")
            channel.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        handshakeTimer?.cancel()
        switch counted {
        case .handshaking: counts.handshaking.wrappingSubtract(1, ordering: .relaxed)
        case .attached: counts.attached.wrappingSubtract(1, ordering: .relaxed)
        case .none: break
        }
        counted = .none
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case TLSUserEvent.handshakeCompleted? = event as? TLSUserEvent, !attached else {
            return context.fireUserInboundEventTriggered(event)
        }
        attached = true
        handshakeTimer?.cancel()
        handshakeTimer = nil
        let channel = context.channel
        let address = TLSEndpointListener.address(of: channel)
        guard let endpoint else { return context.close(promise: nil) }
        counts.handshaking.wrappingSubtract(1, ordering: .relaxed)
        counted = .attached
        guard counts.attached.wrappingAdd(1, ordering: .relaxed).newValue <= settings.maxMonitors else {
            // Told in the protocol's words, so the monitor says why.
            let refusal = EndpointProtocol.error("refused: \(settings.maxMonitors) remote monitors are attached already") + "\n"
            endpoint.options.notice("turned away a remote monitor from \(address): \(settings.maxMonitors) are attached already")
            context.writeAndFlush(NIOAny(ByteBuffer(string: refusal))).whenComplete { _ in channel.close(promise: nil) }
            return
        }
        let settings = self.settings
        channel.nioSSL_peerCertificate().whenSuccess { certificate in
            let subject = certificate.map(EndpointTLS.subject(of:)) ?? "no certificate"
            var pair: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else {
                endpoint.options.notice("cannot take a remote monitor from \(address): socketpair: \(String(cString: strerror(errno)))")
                return channel.close(promise: nil)
            }
            let (endpointSide, bridgeSide) = (pair[0], pair[1])
            // The bridge's end of the pair, on the TLS channel's event loop (glued channels share one).
            ClientBootstrap(group: channel.eventLoop)
                .withConnectedSocket(bridgeSide)
                .whenComplete { result in
                    switch result {
                    case .success(let inner):
                        do {
                            let (tlsSide, pairSide) = GlueHandler.matchedPair()
                            try channel.pipeline.syncOperations.addHandler(tlsSide)
                            try inner.pipeline.syncOperations.addHandler(pairSide)
                        } catch {
                            inner.close(promise: nil)
                            close(endpointSide)
                            return channel.close(promise: nil)
                        }
                        guard endpoint.adopt(endpointSide, peer: .remote(subject: subject, address: address)) else {
                            close(endpointSide)
                            return channel.close(promise: nil)
                        }
                        endpoint.options.notice("remote monitor \(subject) attached from \(address)"
                                                + (settings.acceptsCommands ? "" : " (it may only watch)"))
                        channel.closeFuture.whenComplete { _ in
                            endpoint.options.notice("remote monitor \(subject) from \(address) detached")
                        }
                    case .failure:
                        close(endpointSide)
                        close(bridgeSide)
                        channel.close(promise: nil)
                    }
                }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if !attached {
            let address = TLSEndpointListener.address(of: context.channel)
            if let refusal = TLSFailureWords.peerRefusal(error) {
                // The monitor sent the alert: it refused this program's certificate, not the other way.
                endpoint?.options.notice("a remote monitor from \(address) refused this program's certificate: \(refusal)")
            } else {
                // BoringSSL says only that verification failed; the certificate it refused says why.
                let refused = try? context.pipeline.syncOperations.nioSSL_peerCertificate()
                endpoint?.options.notice("refused a remote monitor from \(address): \(TLSFailureWords.describe(error, refusedCertificate: refused))")
            }
        }
        context.close(promise: nil)
    }
}
