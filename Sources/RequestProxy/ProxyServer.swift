import ChannelGlue
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import RequestOperations
import Synchronization

/// `reqtop proxy`'s server: an HTTP/1.1 forward proxy on SwiftNIO whose upstream leg is an
/// operation on ``RequestQueue`` — each request a client sends is one ``RequestOperation``
/// (id `c<connection>-r<request>`), so the monitor, recordings, breakpoints and faults see it
/// like any other. `CONNECT` is intercepted with ``ProxyOptions/authority``'s leaves, or
/// tunnelled as bytes.
public final class ProxyServer: Sendable {
    /// The address and port it listens on (the port picked when 0 was asked).
    public let host: String
    public let port: Int
    private let channel: Channel
    let context: ProxyContext

    private init(channel: Channel, context: ProxyContext, host: String, port: Int) {
        self.channel = channel
        self.context = context
        self.host = host
        self.port = port
    }

    /// Listens on `options.host:options.port` and serves until ``stop()``.
    /// - Parameter accepting: false to take no connection until ``accept()``: the port is bound
    ///   (and named) at once, a client connecting meanwhile waits in the kernel's backlog, and
    ///   no request is served before whatever records or shows it has begun to listen.
    public static func start(queue: RequestQueue, options: ProxyOptions, accepting: Bool = true) throws -> ProxyServer {
        // A pipe's reader gone must not end the process (NIO sends with MSG_NOSIGNAL; this
        // covers everything else the process writes).
        signal(SIGPIPE, SIG_IGN)
        let context = ProxyContext(queue: queue, options: options)
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.autoRead, value: accepting)
            // NIO's default too, said here as each client's connection relies on it: an accepted
            // socket inherits it (ProxyServerSocketTests), and small writes then go at once.
            .serverChannelOption(NoDelay.option, value: 1)
            .childChannelInitializer { channel in
                guard context.admit() else { return channel.close() }
                channel.closeFuture.whenComplete { _ in context.left() }
                // A failed future, not a close: NIO then closes the connection itself and
                // goes no further with it.
                do { try ClientConnectionOptions.apply(to: channel) } catch { return channel.eventLoop.makeFailedFuture(error) }
                // One query for the client's socket: whose it is (served or not) and, later,
                // which program holds it (the PROGRAM column).
                let socket = ClientProgram.clientSocket(of: channel)
                if let refusal = context.refusal(of: socket) {
                    return channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Refusing(refusal)) }
                }
                let client = ClientOrigin(socket)
                channel.closeFuture.whenComplete { _ in client.connectionClosed() }
                return channel.eventLoop.makeCompletedFuture {
                    try ProxyConnectionHandler.install(on: channel, context: context, connection: context.nextConnection(), origin: nil,
                                                       client: client)
                }
            }
        let channel = try bootstrap.bind(host: options.host, port: options.port).wait()
        let port = channel.localAddress?.port ?? options.port
        context.ownersTold.store(ClientProgram.tellsOwners(listeningAt: channel.localAddress), ordering: .relaxed)
        context.listening.withLock { $0 = ProxySelf(host: options.host, port: port) }
        return ProxyServer(channel: channel, context: context, host: options.host, port: port)
    }

    /// Begins taking connections, of a server started not ``start(queue:options:accepting:)``
    /// accepting; those waiting in the backlog first.
    public func accept() {
        channel.setOption(.autoRead, value: true).whenFailure { _ in }
    }

    /// Stops taking requests and lets the ones in flight end: no new connection is taken, and
    /// a request that comes on an open one is answered 503 and its connection closed. What
    /// is in flight is relayed to its end (or cancelled by whoever stops the proxy, later).
    public func drain() {
        context.draining.store(true, ordering: .relaxed)
        channel.close(promise: nil)
    }

    /// Stops listening; connections open now are closed.
    public func stop() {
        try? channel.close().wait()
        context.closeAll()
    }

    /// Client connections open now.
    public var openConnections: Int { context.open.withLock { $0.count } }

    /// Whether a connection's owner is told, so that a proxy without credentials serves its own
    /// user alone. False: any user of this machine can send through it (say so, loudly).
    public var tellsClientOwners: Bool { context.ownersTold.load(ordering: .relaxed) }
}

/// What every connection of one proxy shares: the queue, the options, the counts.
final class ProxyContext: Sendable {
    let queue: RequestQueue
    let options: ProxyOptions
    /// Where it listens (set once bound): a request aimed there is refused.
    let listening = Mutex(ProxySelf.none)
    let open = Mutex<(count: Int, numbered: Int)>((0, 0))
    /// Whether the kernel tells a connection's owner (asked once, of the listener): until
    /// then, on Linux, assumed (a connection it cannot place is refused, not served).
    #if os(Linux)
    let ownersTold = Atomic(true)
    #else
    let ownersTold = Atomic(false)
    #endif
    /// Stopping (``ProxyServer/drain()``): new requests are refused.
    let draining = Atomic(false)
    private let channels = Mutex<[ObjectIdentifier: Channel]>([:])
    private let upstreamContext = Mutex<NIOSSLContext?>(nil)
    /// Hosts whose refusal by a client was told (``ProxyOptions/onClientRefusal``): once each.
    private let refusedHosts = Mutex<Set<String>>([])
    /// How many refused requests become rows (``RefusalRowBudget``).
    private let refusalRows = Mutex(RefusalRowBudget())

    init(queue: RequestQueue, options: ProxyOptions) {
        self.queue = queue
        self.options = options
    }

    /// The TLS context of upstream connections the proxy makes itself (an upgrade to wss),
    /// made once from ``ProxyOptions/upstreamTLS``.
    func upstreamTLS() throws -> NIOSSLContext {
        try upstreamContext.withLock { context in
            if let context { return context }
            let made = try NIOSSLContext(configuration: options.upstreamTLS)
            context = made
            return made
        }
    }

    /// This process's user, read once (``refusal(of:)`` asks at every connection).
    private static let ownUser = getuid()

    /// What a connection from another user of this machine is told before it is closed, when
    /// the proxy takes no credentials: a proxy on loopback is its own user's, as a Unix socket
    /// would be — another user's program would otherwise send through it with this user's
    /// client certificate and reach what only this user's loopback services answer. Nil: served.
    /// A client whose owner cannot be told (not Linux) is served.
    func refusal(of socket: ClientProgram.Socket?) -> ByteBuffer? {
        guard options.credentials == nil else { return nil }
        guard let socket else {
            // Not told, where the machine tells owners (the client left at once, a query
            // that failed): refused, not served to whoever it was.
            guard ownersTold.load(ordering: .relaxed) else { return nil }
            return ProxyFailureAnswer(status: 403, errorType: "proxy_internal_response",
                                      message: "this proxy serves its own user only (uid \(Self.ownUser)), and the kernel did not say whose this connection is").bytes
        }
        guard socket.uid != Self.ownUser else { return nil }
        return ProxyFailureAnswer(status: 403, errorType: "proxy_internal_response",
                                  message: "this proxy serves its own user only (uid \(Self.ownUser)), not uid \(socket.uid); start it with --auth to let others in").bytes
    }

    /// A client refused the proxy's certificate for `host`: told the first time only (a
    /// browser retries a refused host many times a page).
    func toldOfRefusal(host: String, program: String?, reason: String) {
        let first = refusedHosts.withLock { hosts in
            guard hosts.count < 10_000 else { return false }
            return hosts.insert(host).inserted
        }
        if first { options.onClientRefusal?(host, program, reason) }
    }

    /// Counts a new connection in, unless as many as allowed are open.
    /// Whether a request refused now gets a row: nil if not (a flood is counted, not shown);
    /// else how many refusals before it were left out, for its row to say.
    func takeRefusalRow() -> Int? {
        refusalRows.withLock { $0.take(at: DispatchTime.now().uptimeNanoseconds) }
    }

    func admit() -> Bool {
        open.withLock { open in
            guard open.count < options.maxConnections else { return false }
            open.count += 1
            return true
        }
    }

    func left() {
        open.withLock { $0.count -= 1 }
    }

    func nextConnection() -> Int {
        open.withLock { open in
            open.numbered += 1
            return open.numbered
        }
    }

    func track(_ channel: Channel) {
        let key = ObjectIdentifier(channel)
        channels.withLock { $0[key] = channel }
        // Strong: the context outlives its connections, and a weak reference would give it a
        // side table, making every retain and release of it (several a request) the slow kind.
        channel.closeFuture.whenComplete { _ in _ = self.channels.withLock { $0.removeValue(forKey: key) } }
    }

    /// Closes every connection, and waits (up to 2 s) until they are closed: a close is queued
    /// behind what the connection's loop still has to write, so an answer given just before
    /// (the 502 of a request cancelled as the proxy stops) leaves before the process ends.
    func closeAll() {
        let closed = channels.withLock { Array($0.values) }.map { $0.close() }
        guard !closed.isEmpty, MultiThreadedEventLoopGroup.currentEventLoop == nil else { return }
        let done = DispatchSemaphore(value: 0)
        EventLoopFuture.andAllComplete(closed, on: closed[0].eventLoop).whenComplete { _ in done.signal() }
        _ = done.wait(timeout: .now() + 2)
    }
}

/// Says `answer` to a connection as it opens, and closes it.
private final class Refusing: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private let answer: ByteBuffer

    init(_ answer: ByteBuffer) {
        self.answer = answer
    }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(answer)).whenComplete { _ in channel.close(promise: nil) }
    }

    /// What the client sends meanwhile is not read into anything.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}
