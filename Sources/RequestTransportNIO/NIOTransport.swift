import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOPosix
import NIOSSL
import RequestOperations
import Synchronization

/// A `RequestTransport` on AsyncHTTPClient (SwiftNIO): the same operations, events and
/// monitor as with URLSession, without FoundationNetworking underneath.
///
/// ```swift
/// let queue = RequestQueue(maxConcurrentRequests: 8, transport: NIOTransport.shared)
/// ```
///
/// - One `HTTPClient` per transport; ``shared`` is the process's, as `SharedSession.shared`
///   is for URLSession.
/// - Redirects are not followed by the client: the operation is asked (so they show as
///   `redirect` events) and the transport follows them, as URLSession does (301/302 turn a
///   POST into a GET, 303 anything but HEAD; 307/308 keep the method and body), up to 16.
/// - Bodies stream: each part the client reads is one `data` callback; nothing is buffered
///   whole. Request bodies are sent as given (a body stream is read first).
/// - Errors are `URLError`s with the codes URLSession would use (``NIOErrorMapping``), so a
///   retry policy decides the same on both transports.
/// - Its connection pool allows 512 connections per host: the queue's limits decide. It does
///   not retry a connection that failed: the retry policy does.
public final class NIOTransport: RequestTransport {
    public static let shared = NIOTransport()

    /// The client that goes direct (no proxy).
    public var client: HTTPClient { clients.direct }
    /// Which proxy each request goes through (``ProxySettings``).
    public var proxies: ProxySettings { clients.proxies }
    private let clients: NIOClients
    /// False when made with `TLSOptions(insecure: true)`.
    public let verifiesCertificates: Bool
    public var name: String { "nio" }
    /// A slot freed on an event loop starts the next request there: one thread hop fewer.
    public var startsNextRequestInCallbacks: Bool { true }
    /// An operation added on an event loop (a completion handler adding the next request)
    /// starts there, after the callback returns, not through the queue's `OperationQueue`.
    /// One added elsewhere is left to the `OperationQueue`: 20,000 added at once from one
    /// thread and started on the event loops ran at 0.6 of the rate the `OperationQueue`'s
    /// worker threads gave, the starts queued ahead of the loops' reads and writes.
    public var operationStarter: OperationStarter? {
        guard let loop = MultiThreadedEventLoopGroup.currentEventLoop else { return nil }
        return { start in loop.execute(start) }
    }
    /// How much a connection reads at once: from 2 KiB, growing while reads fill it, up to
    /// 1 MiB (as a bare relay reads), one read a wake-up. NIO's default stops at 64 KiB: a 1 GiB
    /// answer came in ~25,000 reads of ~42 KiB, each carried through the client, the engine and
    /// (in a proxy) a write of its own; with 256 KiB the proxy moved it at 0.66–0.89 of a bare
    /// relay's rate, with 1 MiB at 0.94–1.11. A connection keeps the buffer it read into, grown to
    /// its largest read, until it closes (a pooled one at the pool's idle timeout): after 100
    /// downloads at once the proxy held 174 MiB, 86 once the pool closed them. Four buffers kept
    /// a connection peaked at 463 MiB; one is (docs/benchmarks.md, "1 GiB each way").
    static let receiveAllocator = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 1 << 20)
    static let readsPerWakeUp: UInt = 1

    /// ``receiveAllocator`` and ``readsPerWakeUp`` on a connection (HTTP/1.1 or HTTP/2) as it opens.
    private static func sizeReads(of channel: Channel) -> EventLoopFuture<Void> {
        channel.setOption(.recvAllocator, value: receiveAllocator)
            .flatMap { channel.setOption(.maxMessagesPerRead, value: readsPerWakeUp) }
    }
    private let nextIdentifier = Mutex(0)
    private let connections = ConnectionLedger()
    /// The exchanges whose answers' trailers a ``TrailerTap`` hands over (a proxy's requests).
    private let trailers: TrailerRegistry

    /// - Parameters:
    ///   - configuration: the client's; redirects are always left to the transport, and
    ///     gzip and deflate answers are decoded (as libcurl does for the URLSession transport,
    ///     so a request gives the same body on both; the engine's body limit counts decoded bytes).
    ///   - proxies: which requests go through which HTTP proxy; by default the environment's,
    ///     read as curl (and so the URLSession transport) reads it.
    ///   - maxDecodedRatio: a decoded body that grows past this many times what came on the
    ///     wire ends the attempt with -1103 (a decompression bomb), counted by the decoder as
    ///     it reads — also for answers without a `Content-Length`, which the engine's own
    ///     check (`RequestOptions.maxDecodedRatio`) cannot judge. nil: no limit.
    ///   - decodesBodies: false: encoded answers pass as they came (their `Content-Encoding`
    ///     and `Content-Length` true to the body), and no `Accept-Encoding` is added — for a
    ///     proxy, whose client negotiated the encoding itself.
    public init(configuration: HTTPClient.Configuration = HTTPClient.Configuration(),
                proxies: ProxySettings = .fromEnvironment(),
                maxDecodedRatio: Int? = RequestOptions.defaultMaxDecodedRatio,
                decodesBodies: Bool = true) {
        var configuration = configuration
        configuration.redirectConfiguration = .disallow
        if #available(macOS 10.15, iOS 13, tvOS 13, watchOS 6, *) {
            // The engine traces its requests itself (RequestTracer: a span an operation, a
            // CLIENT span an attempt, its `traceparent` in the request): the client's own span
            // for the same request would be a second CLIENT span and a second `traceparent`
            // where a program bootstraps a tracer; with none bootstrapped, a no-op span named
            // through reflection, ~7k instructions a request (#58).
            configuration.tracing.tracer = nil
        }
        configuration.decompression = decodesBodies ? .enabled(limit: maxDecodedRatio.map { .ratio(max(1, $0)) } ?? .none) : .disabled
        configuration.connectionPool = HTTPClient.Configuration.ConnectionPool(
            idleTimeout: configuration.connectionPool.idleTimeout, concurrentHTTP1ConnectionsPerHostSoftLimit: 512)
        // A connection that cannot be made fails the attempt at once, as with URLSession: the
        // retry policy (and early retry) decide what happens next. The client's own retrying
        // would hold a refused connection for its 10 s connect timeout.
        configuration.connectionPool.retryConnectionEstablishment = false
        // No response may take the process down: see ResponseStatusGuard. A caller's own
        // initializer runs after ours.
        let callersInitializer = configuration.http1_1ConnectionDebugInitializer
        let trailers = TrailerRegistry()
        self.trailers = trailers
        configuration.http1_1ConnectionDebugInitializer = { channel in
            let guarded = Self.sizeReads(of: channel)
                .flatMap { ResponseStatusGuard.install(on: channel) }
                .flatMap { TrailerTap.install(on: channel, registry: trailers) }
            guard let callersInitializer else { return guarded }
            return guarded.flatMap { callersInitializer(channel) }
        }
        let callersHTTP2Initializer = configuration.http2ConnectionDebugInitializer
        configuration.http2ConnectionDebugInitializer = { channel in
            let sized = Self.sizeReads(of: channel)
            guard let callersHTTP2Initializer else { return sized }
            return sized.flatMap { callersHTTP2Initializer(channel) }
        }
        let callersStreamInitializer = configuration.http2StreamChannelDebugInitializer
        configuration.http2StreamChannelDebugInitializer = { channel in
            let guarded = ResponseStatusGuard.install(onStream: channel).flatMap { TrailerTap.install(onStream: channel, registry: trailers) }
            guard let callersStreamInitializer else { return guarded }
            return guarded.flatMap { callersStreamInitializer(channel) }
        }
        clients = NIOClients(configuration: configuration, proxies: proxies, decodesBodies: decodesBodies)
        verifiesCertificates = configuration.tlsConfiguration?.certificateVerification != CertificateVerification.none
    }

    /// Closes the client's connections; the transport cannot be used afterwards. Not for
    /// ``shared``, which lives as long as the process.
    public func shutdown() async throws {
        try await clients.shutdown()
    }

    public func makeTask(for request: RequestMessage, handler: TransportCallbacks) -> TransportTask {
        let identifier = nextIdentifier.withLock { value in
            value += 1
            return value
        }
        return TransportTask(identifier: identifier, handle: NIOExchange(identifier: identifier, request: request, handler: handler, clients: clients, connections: connections,
                                                                          trailers: trailers))
    }

    public func resume(_ task: TransportTask) {
        (task.handle as? NIOExchange)?.start()
    }

    public func cancel(_ task: TransportTask) {
        (task.handle as? NIOExchange)?.cancel()
    }

    public func discard(_ task: TransportTask) {}

    /// The connection's reads wait while an operation's body stream is full (its parts come
    /// through `didReceivePaced`).
    public func resumeReading(_ task: TransportTask) {
        (task.handle as? NIOExchange)?.resumeReading()
    }

    public func afterReads(_ task: TransportTask, _ work: @escaping @Sendable () -> Void) {
        guard let exchange = task.handle as? NIOExchange else { return work() }
        exchange.afterReads(work)
    }
}
