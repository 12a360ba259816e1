import ChannelGlue
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOHTTP2
import NIOSSL
import Synchronization

/// An HTTP/1.1 server on loopback whose routes misbehave on purpose: statuses, delays,
/// slow drips, redirect chains, flaky endpoints, `Retry-After`, cut and reset connections,
/// hangs and an echo. The demo, the tests and the benchmarks run against it.
///
/// It binds to 127.0.0.1 only. Routes are listed in ``FaultRoute`` and docs/fault-server.md.
public final class FaultServer: Sendable {
    public let host = "127.0.0.1"
    public let port: Int
    /// `http://127.0.0.1:PORT`
    public let baseURL: URL
    public let counters: FaultCounters
    private let channel: Channel
    /// The connections it accepted and has not closed, so that ``stop()`` takes them down too.
    private let connections: OpenConnections

    private init(channel: Channel, port: Int, baseURL: URL, counters: FaultCounters, connections: OpenConnections) {
        self.channel = channel
        self.connections = connections
        self.port = port
        self.counters = counters
        self.baseURL = baseURL
    }

    /// Starts a server on 127.0.0.1. Blocks until it listens.
    /// - Parameter port: 0 (the default) picks a free port; a fixed port lets a test
    ///   stop a server and start it again where clients expect it.
    /// - Parameter tls: serve HTTPS with this certificate (``TestCertificates``); its
    ///   ``baseURL`` is then `https://127.0.0.1:PORT`.
    /// - Parameter clientCertificates: with `tls`, require every client to show a certificate
    ///   from this authority (mTLS): ``TestCertificates/caFile`` of the same or another set.
    /// - Parameter http2: with `tls`, offer HTTP/2 by ALPN (and HTTP/1.1 to a client that
    ///   wants it): every route the same, each request on a stream of its own.
    public static func start(port: Int = 0, tls: TestCertificates? = nil, clientCertificates: TestCertificates? = nil, http2: Bool = false,
                             counters: FaultCounters = FaultCounters(), script: ScriptedAnswers? = nil,
                             logger: Logger = Logger(label: "reqtop.fault-server")) throws -> FaultServer {
        let connections = OpenConnections()
        let context = try tls.map { tls in
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(tls.serverCertificateFile).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: tls.serverKeyFile, format: .pem)))
            if let clientCertificates {
                configuration.certificateVerification = .noHostnameVerification
                configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(clientCertificates.caFile))
            }
            if http2 { configuration.applicationProtocols = ["h2", "http/1.1"] }
            return try NIOSSLContext(configuration: configuration)
        }
        let channel = try bootstrap(counters: counters, logger: logger, connections: connections, tls: context, http2: http2 && tls != nil,
                                    script: script)
            .bind(host: "127.0.0.1", port: port).wait()
        guard let boundPort = channel.localAddress?.port else {
            try? channel.close().wait()
            throw FaultServerError.noPort
        }
        logger.debug("fault server listening", metadata: ["port": "\(boundPort)"])
        return FaultServer(channel: channel, port: boundPort, baseURL: URL(string: "\(tls == nil ? "http" : "https")://127.0.0.1:\(boundPort)")!,
                           counters: counters, connections: connections)
    }

    /// Starts a server on a Unix domain socket at `path` (which must not exist): a local
    /// resource that no server's answer may make a client reach (the redirect-safety tests
    /// check nothing arrives here). Its ``baseURL`` is AsyncHTTPClient's `http+unix://`
    /// form and ``port`` is 0.
    public static func start(unixSocketPath path: String, counters: FaultCounters = FaultCounters(),
                             logger: Logger = Logger(label: "reqtop.fault-server")) throws -> FaultServer {
        let connections = OpenConnections()
        let channel = try bootstrap(counters: counters, logger: logger, connections: connections)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: false).wait()
        let encoded = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? path
        return FaultServer(channel: channel, port: 0, baseURL: URL(string: "http+unix://\(encoded)")!,
                           counters: counters, connections: connections)
    }

    private static func bootstrap(counters: FaultCounters, logger: Logger, connections: OpenConnections,
                                  tls: NIOSSLContext? = nil, http2: Bool = false, script: ScriptedAnswers? = nil) -> ServerBootstrap {
        ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                connections.add(channel)
                let secured = channel.eventLoop.makeCompletedFuture {
                    // Where the socket is TCP (a Unix socket has no such option).
                    if channel.localAddress?.protocol != .unix {
                        try channel.syncOptions?.setOption(NoDelay.option, value: 1)
                    }
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                }
                @Sendable func http1(_ channel: Channel) -> EventLoopFuture<Void> {
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                        try channel.pipeline.syncOperations.addHandler(FaultHandler(counters: counters, logger: logger, script: script))
                    }
                }
                guard http2 else { return secured.flatMap { http1(channel) } }
                return secured.flatMap {
                    channel.configureHTTP2SecureUpgrade(h2ChannelConfigurator: { channel in
                        channel.configureHTTP2Pipeline(mode: .server) { stream in
                            stream.eventLoop.makeCompletedFuture {
                                // A bodiless answer (a recorded gRPC call's trailers-only status) in one frame.
                                try stream.pipeline.syncOperations.addHandler(HeadersEndCoalescer())
                                try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                                try stream.pipeline.syncOperations.addHandler(FaultHandler(counters: counters, logger: logger, script: script))
                            }
                        }.map { _ in }
                    }, http1ChannelConfigurator: http1)
                }
            }
    }

    /// A URL on this server: `url("/status/503?retry-after=1")`.
    public func url(_ pathAndQuery: String) -> URL {
        URL(string: baseURL.absoluteString + (pathAndQuery.hasPrefix("/") ? "" : "/") + pathAndQuery)!
    }

    /// Stops listening and closes every connection it accepted: a host that goes down
    /// drops its kept-alive connections too (the demo's outage relies on it).
    public func stop() {
        try? channel.close().wait()
        connections.closeAll()
    }

    /// The bytes `/bytes/N?seed=S` sends: a SplitMix64 stream, different for every seed
    /// (``SeededBytes``).
    public static func expectedBytes(count: Int, seed: UInt64) -> [UInt8] {
        var bytes = SeededBytes(seed: seed)
        return bytes.next(count)
    }
}

public enum FaultServerError: Error, CustomStringConvertible {
    case noPort

    public var description: String { "the fault server bound no port" }
}

/// The accepted connections of one server, removed as they close.
private final class OpenConnections: Sendable {
    private let open = Mutex<[ObjectIdentifier: Channel]>([:])

    func add(_ channel: Channel) {
        let key = ObjectIdentifier(channel)
        open.withLock { $0[key] = channel }
        channel.closeFuture.whenComplete { [weak self] _ in _ = self?.open.withLock { $0.removeValue(forKey: key) } }
    }

    func closeAll() {
        let channels = open.withLock { open in
            defer { open = [:] }
            return Array(open.values)
        }
        for channel in channels { channel.close(promise: nil) }
    }
}
