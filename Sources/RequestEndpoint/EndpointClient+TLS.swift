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
import RequestOperations
import Synchronization

extension EndpointClient {
    /// What a monitor presents to a program's TLS endpoint, and what it trusts (PEM files).
    public struct TLSIdentity: Sendable {
        /// The authority that signed the program's certificate (`--cacert`).
        public var caFile: String
        /// This monitor's certificate and key (`--cert`, `--key`), from the authority the program names.
        public var certificateFile: String
        public var keyFile: String

        public init(caFile: String, certificateFile: String, keyFile: String) {
            self.caFile = caFile
            self.certificateFile = certificateFile
            self.keyFile = keyFile
        }
    }

    /// Connects to a program's endpoint over mutual TLS (``EndpointTLS``). The connection is
    /// bridged into a socket pair, so everything after is what a Unix socket's client does.
    /// The program's certificate is verified against `identity.caFile`, its name against `host`.
    public static func connect(host: String, port: Int, identity: TLSIdentity, timeout: TimeInterval = 10) throws -> EndpointClient {
        let where_ = "tls://" + HostAddress.authority(host, port: port)
        let roots = try EndpointTLS.load(identity.caFile, "--cacert", NIOSSLCertificate.fromPEMFile)
        let chain = try EndpointTLS.load(identity.certificateFile, "--cert", NIOSSLCertificate.fromPEMFile)
        let key = try EndpointTLS.load(identity.keyFile, "--key") { try NIOSSLPrivateKey(file: $0, format: .pem) }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.trustRoots = .certificates(roots)
        configuration.certificateChain = chain.map { .certificate($0) }
        configuration.privateKey = .privateKey(key)
        let context = try NIOSSLContext(configuration: configuration)
        let isAddress = host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." }
        let bridge = TLSClientBridge()
        let channel: Channel
        do {
            channel = try ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.milliseconds(Int64(timeout * 1000)))
                .channelOption(.socketOption(.so_keepalive), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: isAddress ? nil : host))
                        try channel.pipeline.syncOperations.addHandler(TLSOutcomeRecorder(bridge: bridge))
                    }
                }
                .connect(host: host, port: port).wait()
        } catch {
            let text = "\(error)"
            let why = text.contains("Connection refused") ? "connection refused (is the program listening with --listen-on?)"
                : text.contains("imed out") || text.contains("connectTimeout") ? "no answer within \(timeout.formatted()) s" : text
            throw EndpointTLSError("cannot connect: \(why)")
        }
        // A network cut gives no close: keepalive probes and a limit on unacknowledged writes
        // end the connection within about 30 s, and the monitor connects again.
        TLSEndpointListener.detectDeadPeers(channel, after: 30)
        guard bridge.handshake.wait(timeout: .now() + timeout) == .success else {
            channel.close(promise: nil)
            throw EndpointTLSError("no TLS handshake within \(timeout.formatted()) s")
        }
        if let failure = bridge.failure {
            channel.close(promise: nil)
            throw EndpointTLSError("TLS failed: \(failure)")
        }
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else {
            channel.close(promise: nil)
            throw EndpointTLSError("socketpair: \(String(cString: strerror(errno)))")
        }
        let (clientSide, bridgeSide) = (pair[0], pair[1])
        do {
            _ = try ClientBootstrap(group: channel.eventLoop).withConnectedSocket(bridgeSide).flatMapThrowing { inner in
                // The program may have closed the connection meanwhile: it refused the
                // certificate (TLS 1.3 says so after the handshake), or said why in a line
                // (too many monitors), which the monitor must still read. (Once closed, the
                // channel's handlers are gone: what was held is kept in the bridge.)
                let held = bridge.takeHeld()
                guard channel.isActive else {
                    guard !held.isEmpty else {
                        inner.close(promise: nil)
                        throw EndpointTLSError(bridge.failure ?? "the program closed the connection")
                    }
                    held.forEach { inner.write($0, promise: nil) }
                    inner.flush()
                    inner.close(mode: .output, promise: nil)
                    return
                }
                let (tlsSide, pairSide) = GlueHandler.matchedPair()
                try channel.pipeline.syncOperations.addHandler(tlsSide)
                try inner.pipeline.syncOperations.addHandler(pairSide)
                try channel.pipeline.syncOperations.handler(type: TLSOutcomeRecorder.self).release(held)
            }.wait()
        } catch {
            Glibc.close(clientSide)
            channel.close(promise: nil)
            throw EndpointTLSError("the program refused this monitor: \(error)")
        }
        bridge.channel.withLock { $0 = channel }
        return EndpointClient(path: where_, fd: clientSide, bridge: bridge)
    }
}

/// The TLS side of a monitor's connection: its channel, and why it failed, for the words
/// when the program closes the connection (a refused certificate comes as an alert after
/// the client's handshake is done, in TLS 1.3).
final class TLSClientBridge: Sendable {
    let handshake = DispatchSemaphore(value: 0)
    let channel = Mutex<Channel?>(nil)
    private let firstFailure = Mutex<String?>(nil)
    /// What the program sent before the bridge was glued on (its hello, or why it refused).
    private let held = Mutex<[ByteBuffer]>([])

    func hold(_ buffer: ByteBuffer) {
        held.withLock { $0.append(buffer) }
    }

    func takeHeld() -> [ByteBuffer] {
        held.withLock { held in
            defer { held = [] }
            return held
        }
    }

    var failure: String? { firstFailure.withLock { $0 } }

    func failed(_ error: Error, refusedCertificate: NIOSSLCertificate? = nil) {
        firstFailure.withLock { $0 = $0 ?? TLSFailureWords.describe(error, refusedCertificate: refusedCertificate, by: .monitor) }
    }

    func close() {
        channel.withLock { $0 }?.close(promise: nil)
    }
}

/// Tells the bridge the handshake's outcome and the first error after it, and holds what the
/// program sends until the bridge is glued on (its hello can come first).
private final class TLSOutcomeRecorder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let bridge: TLSClientBridge
    private var told = false
    private var holding = true
    private var context: ChannelHandlerContext?

    init(bridge: TLSClientBridge) {
        self.bridge = bridge
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if holding { bridge.hold(unwrapInboundIn(data)) } else { context.fireChannelRead(data) }
    }

    /// The glue is on: `held` (what came before it) goes to it, and what comes next passes.
    /// On the channel's event loop.
    func release(_ held: [ByteBuffer]) {
        guard let context, holding else { return }
        holding = false
        held.forEach { context.fireChannelRead(NIOAny($0)) }
        if !held.isEmpty { context.fireChannelReadComplete() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted? = event as? TLSUserEvent, !told {
            told = true
            bridge.handshake.signal()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // BoringSSL says only that verification failed; the certificate it refused says why.
        bridge.failed(error, refusedCertificate: try? context.pipeline.syncOperations.nioSSL_peerCertificate())
        if !told {
            told = true
            bridge.handshake.signal()
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !told {
            told = true
            bridge.failed(EndpointTLSError("the program closed the connection during the handshake"))
            bridge.handshake.signal()
        }
        context.fireChannelInactive()
    }
}
