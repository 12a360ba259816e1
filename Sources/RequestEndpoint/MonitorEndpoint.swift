#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import RequestOperations
import Synchronization
import RequestEventFormat

/// Lets `reqtop attach` watch and steer a program's queue: a Unix domain socket in a
/// per-user folder (see ``EndpointDirectory``), one per process, named by its pid.
///
/// ```swift
/// let endpoint = try queue.startMonitorEndpoint()     // one call; stop() or process exit removes it
/// ```
///
/// - Only peers of the same user are accepted (their credentials are checked); the socket
///   is 0600 in a 0700 folder.
/// - A monitor that connects gets a snapshot of every live and recently finished operation,
///   then the event stream (see ``EndpointProtocol``).
/// - Commands (retry now, cancel, cancel all, suspend, resume, release batches) are answered
///   on the same connection; with ``Options/readOnly`` every one is refused.
/// - The program is never slowed by a monitor: events are appended to each connection's
///   bounded buffer and written by the endpoint's own thread without blocking. A monitor
///   that falls behind loses the events that do not fit, is told how many, and gets a fresh
///   snapshot once it has caught up.
///
/// `@unchecked Sendable` is not needed: all mutable state is one struct behind a `Mutex`.
public final class MonitorEndpoint: Sendable {
    public struct Options: Sendable {
        /// Refuse every command: monitors may only watch.
        public var readOnly: Bool
        /// Take injected faults (`!`, `Z`) from attached monitors. Off by default: a person
        /// at a monitor could otherwise fail a production program's requests. Each monitor's
        /// faults are removed when it detaches or dies; never taken when ``readOnly``.
        public var acceptsFaults: Bool
        /// The folder of the socket. Default: ``EndpointDirectory/path``.
        public var directory: String
        /// The program's name in `reqtop attach`'s list.
        public var name: String
        /// Bytes a connection may have waiting to be written before events are dropped; a
        /// monitor whose command replies alone pass it (it sends commands and reads
        /// nothing) is disconnected.
        public var bufferLimit: Int
        /// Finished operations kept for monitors that attach later.
        public var finishedLimit: Int
        /// How long ``MonitorEndpoint/stop()`` keeps writing to monitors what they have not
        /// read yet, before it closes their connections anyway.
        public var closingGrace: TimeInterval = 2
        /// Takes secrets out of every event before it is kept or sent (a monitor's screen is
        /// often shared); nil sends them as they are. The hello says which.
        public var redactor: Redactor? = Redactor()
        /// Where the endpoint says what it did on its own: a monitor dropped for not reading
        /// its replies (said once). Default: a line on stderr.
        public var notice: @Sendable (String) -> Void = { text in
            FileHandle.standardError.write(Data(("reqtop endpoint: " + text + "\n").utf8))
        }
        /// Also listen on TCP with mutual TLS, for a monitor on another machine (``EndpointTLS``).
        public var tls: EndpointTLS?

        public init(readOnly: Bool = false, acceptsFaults: Bool = false, directory: String = EndpointDirectory.path, name: String = ProcessInfo.processInfo.processName,
                    bufferLimit: Int = 1 << 20, finishedLimit: Int = 1000) {
            self.readOnly = readOnly
            self.acceptsFaults = acceptsFaults
            self.directory = directory
            self.name = name
            self.bufferLimit = bufferLimit
            self.finishedLimit = finishedLimit
        }
    }

    /// The socket's path.
    public let path: String
    public let options: Options
    /// The options' redactor over this endpoint's one stream: it also takes out secrets a
    /// server echoes back (``StreamRedactor``).
    private let streamRedactor: StreamRedactor?
    let queue: RequestQueue
    let listener: Int32
    let wakeRead: Int32
    let wakeWrite: Int32
    let startedAt = Date()
    let state: Mutex<State>
    let done = DispatchSemaphore(value: 0)
    /// The TCP side, when ``Options/tls`` asks for one.
    private let tlsListener = Mutex<TLSEndpointListener?>(nil)

    struct State {
        var journal: OperationJournal
        var connections: [Int32: EndpointConnection] = [:]
        var subscription: EventSubscription?
        var stopped = false
        /// Set once the last events are in the buffers: the I/O thread writes them out and ends.
        var draining = false
        /// A monitor was disconnected for not reading its replies (the notice is given once).
        var droppedForNotReading = false

        /// Changes connection `fd` in place: a copy taken out of the dictionary and put back
        /// would copy its buffers on every change. Nil when it is gone.
        mutating func update<R>(_ fd: Int32, _ change: (inout EndpointConnection) -> R) -> R? {
            guard connections[fd] != nil else { return nil }
            return change(&connections[fd]!)
        }
    }

    private init(queue: RequestQueue, options: Options) throws {
        try EndpointDirectory.prepare(options.directory)
        path = EndpointDirectory.socketPath(pid: getpid(), in: options.directory)
        self.options = options
        streamRedactor = options.redactor.map(StreamRedactor.init)
        self.queue = queue
        listener = try UnixSocket.listen(at: path)
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            close(listener)
            unlink(path)
            throw UnixSocket.Failure(call: "pipe", path: path, code: errno)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        UnixSocket.setNonBlocking(wakeRead)
        UnixSocket.setNonBlocking(wakeWrite)
        state = Mutex(State(journal: OperationJournal(finishedLimit: options.finishedLimit)))
        SocketCleanup.add(path)
    }

    /// Opens the endpoint for `queue`.
    public static func start(queue: RequestQueue, options: Options = Options()) throws -> MonitorEndpoint {
        let endpoint = try MonitorEndpoint(queue: queue, options: options)
        // Batches of 25 ms: well under a monitor's frame (about 80 ms), and each costs the
        // program a wake-up of this subscriber, of the I/O thread and of the monitor.
        let subscription = queue.events.subscribe(label: "reqtop.endpoint", delay: 0.025) { [weak endpoint] batch in endpoint?.publish(batch) }
        endpoint.state.withLock { $0.subscription = subscription }
        let thread = Thread { [endpoint] in endpoint.serve() }
        thread.name = "reqtop.endpoint"
        thread.start()
        if let tls = options.tls {
            do {
                let listener = try TLSEndpointListener(tls, endpoint: endpoint)
                endpoint.tlsListener.withLock { $0 = listener }
                if !tls.isLoopback {
                    options.notice("LISTENING BEYOND THIS MACHINE on \(tls.host):\(listener.port) (TLS; only monitors with a certificate from \(tls.clientCAFile); "
                                   + (tls.acceptsCommands ? "they may send commands)" : "they may only watch)"))
                }
            } catch {
                endpoint.stop()
                throw error
            }
        }
        return endpoint
    }

    /// The TCP port of the TLS side (``Options/tls``), once listening.
    public var tlsPort: Int? { tlsListener.withLock { $0?.port } }

    /// Takes a connected peer the TLS side verified: one end of a socket pair, served like a
    /// Unix socket's. False when the endpoint has stopped.
    func adopt(_ fd: Int32, peer: EndpointPeer) -> Bool {
        UnixSocket.setNonBlocking(fd)
        let taken = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            var connection = EndpointConnection()
            connection.peer = peer
            connection.append(greeting(state, peer: peer))
            state.connections[fd] = connection
            return true
        }
        if taken { wake() }
        return taken
    }

    /// Closes every connection and removes the socket. Monitors see the program end, after
    /// every event the program published: the events still gathering in the subscription's
    /// batch are handed over, and each connection's buffer is written out before it closes
    /// (for at most ``Options/closingGrace`` to a monitor that stopped reading).
    public func stop() {
        let listener = tlsListener.withLock { listener in
            defer { listener = nil }
            return listener
        }
        listener?.stop()
        let subscription = state.withLock { state -> EventSubscription? in
            guard !state.stopped else { return nil }
            state.stopped = true
            defer { state.subscription = nil }
            return state.subscription
        }
        guard let subscription else { return }
        // `stopped` is set: `publish` still appends what `finish` hands over, and the I/O
        // thread drains the buffers before it closes them.
        subscription.finish()
        state.withLock { $0.draining = true }
        wake()
        done.wait()
    }

    deinit {
        stop()
    }

    /// Monitors attached now.
    public var connectionCount: Int { state.withLock { $0.connections.count } }

    // MARK: - Events in

    func publish(_ original: [RequestEvent]) {
        let batch = streamRedactor?.redact(original) ?? original
        func encode() -> [UInt8] {
            var bytes: [UInt8] = []
            for event in batch {
                EventLog.append(event, to: &bytes)
                bytes.append(UInt8(ascii: "\n"))
            }
            return bytes
        }
        // Encoded outside the lock when someone is attached (the usual case then); a monitor
        // that attaches in between gets it encoded under the lock, so it misses nothing.
        let anyone = state.withLock { !$0.connections.isEmpty }
        let encoded = anyone ? encode() : nil
        let attached = state.withLock { state -> Bool in
            state.journal.apply(batch)
            guard !state.connections.isEmpty else { return false }
            let bytes = encoded ?? encode()
            for index in state.connections.values.indices {
                // A batch always fits an empty buffer (one larger than the limit is no reason
                // to start a reading monitor over); otherwise the limit holds.
                let connection = state.connections.values[index]
                if connection.behind || (connection.pending > 0 && connection.pending + bytes.count > options.bufferLimit) {
                    state.connections.values[index].behind = true
                    state.connections.values[index].missed += batch.count
                } else {
                    state.connections.values[index].append(bytes)
                }
            }
            return true
        }
        if attached { wake() }
    }

    func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }
}

extension RequestQueue {
    /// Opens a monitor endpoint for this queue (see ``MonitorEndpoint``).
    public func startMonitorEndpoint(options: MonitorEndpoint.Options = MonitorEndpoint.Options()) throws -> MonitorEndpoint {
        try MonitorEndpoint.start(queue: self, options: options)
    }

    /// Opens a monitor endpoint that also listens on TCP with mutual TLS, for a monitor on
    /// another machine (``EndpointTLS``; remote monitors only watch unless
    /// `options.tls.acceptsCommands`):
    ///
    /// ```swift
    /// let endpoint = try queue.startMonitorEndpoint(.tls(host: "0.0.0.0", port: 9443, certificate: "program.pem",
    ///                                                    key: "program.key", clientCA: "monitors-ca.pem"))
    /// ```
    public func startMonitorEndpoint(_ listening: MonitorEndpoint.Listening, options: MonitorEndpoint.Options = MonitorEndpoint.Options()) throws -> MonitorEndpoint {
        var options = options
        switch listening {
        case .unixSocket:
            options.tls = nil
        case .tls(let host, let port, let certificate, let key, let clientCA):
            let acceptsCommands = options.tls?.acceptsCommands ?? false
            options.tls = EndpointTLS(host: host, port: port, certificateFile: certificate, keyFile: key, clientCAFile: clientCA)
            options.tls?.acceptsCommands = acceptsCommands
        }
        return try MonitorEndpoint.start(queue: self, options: options)
    }
}

extension MonitorEndpoint {
    /// Where an endpoint listens: always on its Unix socket (this user's programs), and with
    /// `.tls` on TCP too (PEM files: the program's certificate and key, and the authority
    /// whose certificates monitors must present).
    public enum Listening: Sendable, Equatable {
        case unixSocket
        case tls(host: String, port: Int, certificate: String, key: String, clientCA: String)
    }
}
