#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import RequestOperations
import Synchronization

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
        /// The folder of the socket. Default: ``EndpointDirectory/path``.
        public var directory: String
        /// The program's name in `reqtop attach`'s list.
        public var name: String
        /// Bytes a connection may have waiting to be written before events are dropped.
        public var bufferLimit: Int
        /// Finished operations kept for monitors that attach later.
        public var finishedLimit: Int

        public init(readOnly: Bool = false, directory: String = EndpointDirectory.path, name: String = ProcessInfo.processInfo.processName,
                    bufferLimit: Int = 1 << 20, finishedLimit: Int = 1000) {
            self.readOnly = readOnly
            self.directory = directory
            self.name = name
            self.bufferLimit = bufferLimit
            self.finishedLimit = finishedLimit
        }
    }

    /// The socket's path.
    public let path: String
    public let options: Options
    private let queue: RequestQueue
    private let listener: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let startedAt = Date()
    private let state: Mutex<State>
    private let done = DispatchSemaphore(value: 0)

    private struct Connection {
        var outbound: [UInt8] = []
        var sent = 0
        var inbound: [UInt8] = []
        /// Skipping the rest of a line that was too long.
        var discarding = false
        /// Events are being dropped until the buffer drains and a snapshot is sent again.
        var behind = false
        var missed = 0

        var pending: Int { outbound.count - sent }

        mutating func append(_ bytes: [UInt8]) {
            if sent > 0, sent * 2 > outbound.count {
                outbound.removeFirst(sent)
                sent = 0
            }
            outbound += bytes
        }
    }

    private struct State {
        var journal: OperationJournal
        var connections: [Int32: Connection] = [:]
        var subscription: EventSubscription?
        var stopped = false

        /// Changes connection `fd` in place: a copy taken out of the dictionary and put back
        /// would copy its buffers on every change. Nil when it is gone.
        mutating func update<R>(_ fd: Int32, _ change: (inout Connection) -> R) -> R? {
            guard connections[fd] != nil else { return nil }
            return change(&connections[fd]!)
        }
    }

    private init(queue: RequestQueue, options: Options) throws {
        try EndpointDirectory.prepare(options.directory)
        path = EndpointDirectory.socketPath(pid: getpid(), in: options.directory)
        self.options = options
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
        return endpoint
    }

    /// Closes every connection and removes the socket. Monitors see the program end.
    public func stop() {
        let subscription = state.withLock { state -> EventSubscription? in
            guard !state.stopped else { return nil }
            state.stopped = true
            defer { state.subscription = nil }
            return state.subscription
        }
        guard let subscription else { return }
        subscription.cancel()
        wake()
        done.wait()
    }

    deinit {
        stop()
    }

    /// Monitors attached now.
    public var connectionCount: Int { state.withLock { $0.connections.count } }

    // MARK: - Events in

    private func publish(_ batch: [RequestEvent]) {
        func encode() -> [UInt8] {
            var text = ""
            for event in batch {
                text += EventLog.line(for: event)
                text += "\n"
            }
            return Array(text.utf8)
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

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    // MARK: - The I/O thread

    private func serve() {
        defer {
            let fds = state.withLock { state -> [Int32] in
                defer { state.connections = [:] }
                return Array(state.connections.keys)
            }
            fds.forEach { close($0) }
            close(listener)
            unlink(path)
            SocketCleanup.remove(path)
            close(wakeRead)
            close(wakeWrite)
            done.signal()
        }
        while true {
            let (stopped, watched) = state.withLock { state in
                // A connection that is behind is watched for room too: the missed notice and
                // the fresh snapshot go out as soon as it has caught up.
                (state.stopped, state.connections.map { ($0.key, $0.value.pending > 0 || $0.value.behind) })
            }
            if stopped { return }
            var polls = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            for (fd, writing) in watched {
                polls.append(pollfd(fd: fd, events: Int16(POLLIN) | (writing ? Int16(POLLOUT) : 0), revents: 0))
            }
            guard poll(&polls, nfds_t(polls.count), -1) >= 0 else {
                if errno == EINTR { continue }
                return
            }
            if polls[1].revents != 0 {
                var sink = [UInt8](repeating: 0, count: 256)
                while read(wakeRead, &sink, sink.count) > 0 {}
            }
            if polls[0].revents & Int16(POLLIN) != 0 { acceptAll() }
            for poll in polls.dropFirst(2) where poll.revents != 0 {
                if poll.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0, !readCommands(poll.fd) {
                    drop(poll.fd)
                    continue
                }
                if !flush(poll.fd) { drop(poll.fd) }
            }
        }
    }

    private func acceptAll() {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            UnixSocket.setNonBlocking(fd)
            guard UnixSocket.peerUserID(fd) == getuid() else {
                let refusal = Array((EndpointProtocol.error("refused: this endpoint accepts only its own user (uid \(getuid()))") + "\n").utf8)
                refusal.withUnsafeBytes { _ = UnixSocket.writeSome(fd, $0) }
                close(fd)
                continue
            }
            state.withLock { state in
                var connection = Connection()
                connection.append(greeting(state))
                state.connections[fd] = connection
            }
            _ = flush(fd)
        }
    }

    /// The hello line and a snapshot of the journal.
    private func greeting(_ state: State) -> [UInt8] {
        let hello = EndpointProtocol.line([
            "event": "hello", "version": EndpointProtocol.version, "pid": Int(getpid()), "name": options.name,
            "startedAt": EventLog.iso8601(startedAt), "t": queue.events.elapsed(), "live": state.journal.liveCount,
            "readOnly": options.readOnly, "suspended": queue.isSuspended,
        ])
        return Array((hello + "\n").utf8) + snapshot(state)
    }

    private func snapshot(_ state: State) -> [UInt8] {
        let (operations, events) = state.journal.snapshot
        var text = EndpointProtocol.line(["event": "snapshot", "operations": operations]) + "\n"
        for event in events {
            text += EventLog.line(for: event)
            text += "\n"
        }
        text += EndpointProtocol.line(["event": "snapshotEnd"]) + "\n"
        return Array(text.utf8)
    }

    /// Writes what the socket takes. False when the peer is gone.
    private func flush(_ fd: Int32) -> Bool {
        state.withLock { state in
            let drained = state.update(fd) { connection -> Bool? in
                while connection.pending > 0 {
                    let written = connection.outbound.withUnsafeBytes { raw in
                        UnixSocket.writeSome(fd, UnsafeRawBufferPointer(rebasing: raw[connection.sent...]))
                    }
                    guard let written else { return nil }
                    if written == 0 { return false }
                    connection.sent += written
                }
                connection.outbound.removeAll(keepingCapacity: true)
                connection.sent = 0
                return true
            }
            guard let drained else { return true }
            guard let drained else { return false }
            if drained, let missed = state.connections[fd].flatMap({ $0.behind ? $0.missed : nil }) {
                // Caught up: say what was lost and start again from a fresh snapshot.
                let resync = Array((EndpointProtocol.line(["event": "missed", "count": missed]) + "\n").utf8) + snapshot(state)
                state.update(fd) { connection in
                    connection.append(resync)
                    connection.behind = false
                    connection.missed = 0
                }
            }
            return true
        }
    }

    private func drop(_ fd: Int32) {
        state.withLock { _ = $0.connections.removeValue(forKey: fd) }
        close(fd)
    }

    /// Reads and answers command lines. False when the peer closed.
    private func readCommands(_ fd: Int32) -> Bool {
        /// What was read, in order: a whole line, or a line that was too long.
        enum Input {
            case line(String)
            case tooLong
        }
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var inputs: [Input] = []
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count == 0 { return false }
            if count < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                if errno == EINTR { continue }
                return false
            }
            state.withLock { state in
                state.update(fd) { connection in
                    for byte in buffer[0..<count] {
                        if byte == UInt8(ascii: "\n") {
                            if !connection.discarding, !connection.inbound.isEmpty {
                                inputs.append(.line(String(decoding: connection.inbound, as: UTF8.self)))
                            }
                            connection.inbound.removeAll(keepingCapacity: true)
                            connection.discarding = false
                        } else if !connection.discarding {
                            connection.inbound.append(byte)
                            if connection.inbound.count > EndpointProtocol.maxCommandLine {
                                connection.inbound = []
                                connection.discarding = true
                                inputs.append(.tooLong)
                            }
                        }
                    }
                }
            }
        }
        // Answered in the order they came, outside the lock (commands take the queue's locks).
        let replies = inputs.map { input in
            switch input {
            case .line(let line): answer(line)
            case .tooLong: EndpointProtocol.error("line too long: a command is at most \(EndpointProtocol.maxCommandLine) bytes")
            }
        }
        if !replies.isEmpty {
            let bytes = Array((replies.joined(separator: "\n") + "\n").utf8)
            state.withLock { state in state.connections[fd]?.append(bytes) }
        }
        return true
    }

    /// Carries out one command line and returns the reply line.
    private func answer(_ line: String) -> String {
        let request: EndpointProtocol.Request
        do {
            request = try EndpointProtocol.parse(line)
        } catch let error as EndpointError {
            return error.id == nil ? EndpointProtocol.error(error.description) : EndpointProtocol.reply(id: error.id, ok: false, error.description)
        } catch {
            return EndpointProtocol.error("\(error)")
        }
        if options.readOnly {
            return EndpointProtocol.reply(id: request.id, ok: false, "refused: this endpoint is read-only")
        }
        let (ok, message) = carryOut(request)
        return EndpointProtocol.reply(id: request.id, ok: ok, message)
    }

    /// The same commands, with the same answers, as the live monitor's (``QueueControl``).
    private func carryOut(_ request: EndpointProtocol.Request) -> (Bool, String) {
        let control = QueueControl(queue: queue)
        let id = request.operation ?? ""
        func find() -> RequestOperation? { queue.operation(withID: id) }
        func gone() -> String {
            state.withLock { $0.journal.events[id] } == nil ? "no operation \(id) in this program" : "\(id) has already ended"
        }
        let answer: QueueControl.Answer
        switch request.command {
        case .retry:
            guard let operation = find() else { return (false, gone()) }
            answer = control.retry(operation)
        case .cancel:
            guard let operation = find() else { return (false, gone()) }
            answer = control.cancel(operation)
        case .cancelAll:
            answer = control.cancelAll(queue.operations)
        case .suspend, .resume:
            answer = control.setSuspended(request.command == .suspend)
            broadcast(EndpointProtocol.line(["event": "suspended", "value": request.command == .suspend]))
        case .releaseBatches:
            answer = control.releaseBatches()
        }
        return (answer.ok, answer.message)
    }

    private func broadcast(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        state.withLock { state in
            for fd in Array(state.connections.keys) { state.connections[fd]?.append(bytes) }
        }
        wake()
    }
}

extension RequestQueue {
    /// Opens a monitor endpoint for this queue (see ``MonitorEndpoint``).
    public func startMonitorEndpoint(options: MonitorEndpoint.Options = MonitorEndpoint.Options()) throws -> MonitorEndpoint {
        try MonitorEndpoint.start(queue: self, options: options)
    }
}

/// Removes endpoint sockets when the process exits without stopping them (`exit()`).
enum SocketCleanup {
    private static let paths = Mutex<Set<String>>([])
    private static let registered = Mutex(false)

    static func add(_ path: String) {
        paths.withLock { _ = $0.insert(path) }
        let first = registered.withLock { registered -> Bool in
            defer { registered = true }
            return !registered
        }
        if first { atexit { SocketCleanup.removeAll() } }
    }

    static func remove(_ path: String) {
        paths.withLock { _ = $0.remove(path) }
    }

    static func removeAll() {
        for path in paths.withLock({ $0 }) { unlink(path) }
    }
}
