#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import RequestOperations
import RequestEventFormat
import Synchronization

/// The monitor's side of an endpoint connection: reads the program's lines, sends
/// commands and waits for their replies.
public final class EndpointClient: Sendable {
    /// What the program says about itself when a monitor connects.
    public struct Hello: Sendable, Equatable {
        public var pid: Int32
        public var name: String
        public var startedAt: String
        /// The program's session time when it said hello.
        public var time: TimeInterval
        public var live: Int
        public var readOnly: Bool
        public var suspended: Bool
        /// Whether the program takes injected faults from monitors, and how many are set.
        public var acceptsFaults = false
        public var faults = 0
        /// The protocol version the program speaks (``EndpointProtocol/version``; 1 when unsaid).
        public var version: Int = EndpointProtocol.version
    }

    /// How the first line of a program went (``greeting(timeout:)``).
    public enum Greeting: Sendable, Equatable {
        case message(Message)
        /// The program closed the connection before a whole line.
        case closed
        /// Nothing whole came within the time.
        case timedOut
    }

    /// One line from the program.
    public enum Message: Sendable, Equatable {
        case hello(Hello)
        case snapshot(operations: Int)
        case snapshotEnd
        case event(RequestEvent)
        case missed(Int)
        case reply(id: Int?, ok: Bool, message: String)
        case error(String)
        case suspended(Bool)
        /// Faults were injected or removed: this many are set now.
        case faults(Int)
        /// A line this version cannot read.
        case unreadable(String)
    }

    public let path: String
    private let fd: Int32
    private let pending = Mutex<[Int: QueueCommandOutcome?]>([:])
    private let nextID = Mutex(0)
    private let replied = DispatchSemaphore(value: 0)
    private let closed = Mutex(false)
    /// The TLS connection behind the socket pair, for a remote program.
    private let bridge: TLSClientBridge?

    init(path: String, fd: Int32, bridge: TLSClientBridge? = nil) {
        self.path = path
        self.fd = fd
        self.bridge = bridge
    }

    /// Why a remote program's connection failed (its TLS alert: a refused certificate), when known.
    public var closeReason: String? { bridge?.failure }

    public static func connect(path: String) throws -> EndpointClient {
        EndpointClient(path: path, fd: try UnixSocket.connect(to: path))
    }

    /// Reads the program's first line within `timeout`: its hello, or an error when it
    /// refuses this connection (another user, say); nil when nothing readable came. Reads
    /// byte by byte, so ``run(_:)`` goes on from the next line.
    public func greeting(timeout: TimeInterval = 5) -> Greeting {
        var wait = timeval(tv_sec: Int(timeout), tv_usec: .init((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        defer {
            var none = timeval()
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
        }
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(fd, &byte, 1)
            if count == 0 { return .closed }
            if count < 0 {
                if errno == EINTR { continue }
                return errno == EAGAIN || errno == EWOULDBLOCK ? .timedOut : .closed
            }
            if byte == UInt8(ascii: "\n") { return .message(Self.parse(String(decoding: line, as: UTF8.self))) }
            guard line.count < 64 * 1024 else { return .message(.unreadable(String(decoding: line.prefix(200), as: UTF8.self))) }
            line.append(byte)
        }
    }

    /// Reads lines until the program closes the connection (or ``close()``), handing each
    /// to `handler` on the calling thread.
    public func run(_ handler: (Message) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var line: [UInt8] = []
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            for byte in buffer[0..<count] {
                if byte == UInt8(ascii: "\n") {
                    let text = String(decoding: line, as: UTF8.self)
                    let message = Self.parse(text)
                    if case .reply(let id?, _, let words) = message {
                        resolve(id, Self.outcome(ofReply: text) ?? .notCarriedOut(reason: words))
                    }
                    handler(message)
                    line.removeAll(keepingCapacity: true)
                } else {
                    line.append(byte)
                }
            }
        }
        // Wake anyone waiting for a reply that will never come.
        replied.signal()
    }

    /// Sends `command` and waits up to `timeout` for the program's outcome of it; a
    /// `QueueCommandOutcome/notCarriedOut(reason:)` when none came.
    public func request(_ command: QueueCommand, timeout: TimeInterval = 3) -> QueueCommandOutcome {
        let id = nextID.withLock { $0 += 1; return $0 }
        pending.withLock { $0[id] = .some(nil) }
        defer { pending.withLock { _ = $0.removeValue(forKey: id) } }
        guard send(line: EndpointProtocol.line(for: command, id: id)) else {
            return .notCarriedOut(reason: "the program closed the connection")
        }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let answer = pending.withLock({ $0[id] }), let answer { return answer }
            if closed.withLock({ $0 }) { break }
            _ = replied.wait(timeout: .now() + min(0.05, max(0, deadline.timeIntervalSinceNow)))
        }
        return .notCarriedOut(reason: "no answer from the program within \(timeout.formatted()) s")
    }

    /// The typed outcome a reply line carries (its `outcome` member).
    static func outcome(ofReply line: String) -> QueueCommandOutcome? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
              let typed = object["outcome"], let data = try? JSONSerialization.data(withJSONObject: typed) else { return nil }
        return try? JSONDecoder().decode(QueueCommandOutcome.self, from: data)
    }

    /// Writes one raw line (tests use it to send what a broken monitor would).
    @discardableResult
    public func send(line: String) -> Bool {
        var bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { raw in
                UnixSocket.writeBlocking(fd, UnsafeRawBufferPointer(rebasing: raw[offset...]))
            }
            guard let written, written > 0 else { return false }
            offset += written
        }
        return true
    }

    public func close() {
        let first = closed.withLock { closed -> Bool in
            defer { closed = true }
            return !closed
        }
        if first {
            shutdown(fd, Int32(SHUT_RDWR))
            bridge?.close()
        }
    }

    deinit {
        Glibc.close(fd)
    }

    private func resolve(_ id: Int, _ outcome: QueueCommandOutcome) {
        let waiting = pending.withLock { pending -> Bool in
            guard pending[id] != nil else { return false }
            pending[id] = .some(outcome)
            return true
        }
        if waiting { replied.signal() }
    }

    /// The hello of the program at `path`, read within `timeout`; nil when none answers.
    public static func hello(path: String, timeout: TimeInterval = 1) -> Hello? {
        guard let fd = try? UnixSocket.connect(to: path) else { return nil }
        defer { Glibc.close(fd) }
        var wait = timeval(tv_sec: Int(timeout), tv_usec: .init((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1, byte != UInt8(ascii: "\n"), line.count < 4096 { line.append(byte) }
        guard case .hello(let hello) = parse(String(decoding: line, as: UTF8.self)) else { return nil }
        return hello
    }

    /// Reads one line of the program's.
    public static func parse(_ text: String) -> Message {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else { return .unreadable(text) }
        if object["op"] != nil {
            // Read from the object already parsed, with the event format's own reader.
            guard let event = (try? EventLog.event(from: object, lineNumber: 0)) ?? nil else { return .unreadable(text) }
            return .event(event)
        }
        // Numbers from the socket are range-checked as the event reader checks them.
        func int(_ key: String) -> Int? { JSONText.integer(object[key]) }
        switch object["event"] as? String {
        case "hello":
            return .hello(Hello(pid: int("pid").flatMap { Int32(exactly: $0) } ?? 0, name: object["name"] as? String ?? "?",
                                startedAt: object["startedAt"] as? String ?? "", time: JSONText.seconds(object["t"]) ?? 0, live: int("live") ?? 0,
                                readOnly: object["readOnly"] as? Bool ?? false, suspended: object["suspended"] as? Bool ?? false,
                                acceptsFaults: object["acceptsFaults"] as? Bool ?? false, faults: int("faults") ?? 0,
                                version: int("version") ?? EndpointProtocol.version))
        case "snapshot": return .snapshot(operations: int("operations") ?? 0)
        case "snapshotEnd": return .snapshotEnd
        case "missed": return .missed(int("count") ?? 0)
        case "reply": return .reply(id: int("id"), ok: object["ok"] as? Bool ?? false, message: object["message"] as? String ?? "")
        case "error": return .error(object["message"] as? String ?? text)
        case "suspended": return .suspended(object["value"] as? Bool ?? false)
        case "faults": return .faults(int("count") ?? 0)
        default: return .unreadable(text)
        }
    }
}
