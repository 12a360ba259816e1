import FaultServer
import Foundation
import RequestOperations
import RequestProxy
import RequestTransportNIO
import XCTest

/// A proxy on a free loopback port in front of real servers, and real clients (curl, Python)
/// run as processes against it.
struct ProxyUnderTest {
    let server: ProxyServer
    let queue: RequestQueue
    let events: EventRecorder
    var url: String { "http://127.0.0.1:\(server.port)" }
}

/// Every event the proxy's queue published, for assertions.
final class EventRecorder: Sendable {
    private let subscription: EventSubscription
    private let all = SendableBox<[RequestEvent]>([])

    init(_ hub: EventHub) {
        let all = self.all
        subscription = hub.subscribe(label: "test") { batch in all.mutate { $0.append(contentsOf: batch) } }
    }

    var events: [RequestEvent] { all.value }

    func operations() -> Set<String> { Set(events.map(\.operationID)) }

    /// Waits (up to 10 s) for the first operation's first event; its id. Events are delivered
    /// a moment after a client has its answer, so a test that reads right after it must wait.
    func firstOperation() -> String? {
        waitFor { events.first?.operationID }
    }

    /// Waits (up to 10 s) until `id` has finished; its events.
    func finished(_ id: String) -> [RequestEvent] {
        waitFor {
            let mine = events.filter { $0.operationID == id }
            return mine.contains(where: { if case .finished = $0.payload { true } else { false } }) ? mine : nil
        } ?? events.filter { $0.operationID == id }
    }

    /// `found()` once it gives a value, looking every 20 ms for up to 10 s; nil if it never does.
    private func waitFor<Value>(_ found: () -> Value?) -> Value? {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let value = found() { return value }
            usleep(20_000)
        }
        return nil
    }
}

/// A value behind a lock, for test bookkeeping.
final class SendableBox<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func mutate(_ change: (inout Value) -> Void) { lock.withLock { change(&stored) } }
}

extension XCTestCase {
    /// Starts a proxy with `options` (its port picked now) whose upstream leg trusts `caFile`.
    func startProxy(_ options: ProxyOptions = ProxyOptions(), trusting caFile: String? = nil, accepting: Bool = true) throws -> ProxyUnderTest {
        var options = options
        options.port = 0
        options.upstreamTLS = try TLSOptions(caFile: caFile).clientConfiguration()
        let transport = try NIOTransport(tls: TLSOptions(caFile: caFile), proxies: ProxySettings(), decodesBodies: false)
        let queue = RequestQueue(maxConcurrentRequests: options.maxConnections, transport: transport, earlyRetry: nil, retryBudget: nil,
                                 circuitBreaker: nil, rateLimits: false, cookies: nil)
        let events = EventRecorder(queue.events)
        let server = try ProxyServer.start(queue: queue, options: options, accepting: accepting)
        addTeardownBlock {
            server.stop()
            queue.cancelAll()
            queue.waitUntilAllOperationsAreFinished()
            try? await transport.shutdown()
        }
        return ProxyUnderTest(server: server, queue: queue, events: events)
    }

    /// A fault server on loopback, stopped at the end of the test.
    func startFaultServer(tls: TestCertificates? = nil, http2: Bool = false) throws -> FaultServer {
        let server = try FaultServer.start(tls: tls, http2: http2)
        addTeardownBlock { server.stop() }
        return server
    }

    /// Runs a Python server `script` that prints its port on its first line; stopped at the
    /// end of the test. The port.
    func startPythonServer(_ script: String, arguments: [String] = []) throws -> Int {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script] + arguments
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        addTeardownBlock { process.terminate(); process.waitUntilExit() }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let byte = out.fileHandleForReading.readData(ofLength: 1)
            guard !byte.isEmpty else { break }
            line += byte
        }
        return try XCTUnwrap(Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)), "the server's port")
    }

    /// A raw socket server in Python on loopback, each connection served on a thread of its
    /// own by `body` (Python, the lines of a function of `conn`; `socket`, `gzip` and `sys`
    /// imported): for upstreams that answer what no framework would. The port.
    func startRawPythonServer(serving body: String) throws -> Int {
        let serve = body.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n")
        return try startPythonServer("""
        import gzip, socket, sys, threading
        server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0)); server.listen(64)
        print(server.getsockname()[1], flush=True)
        def serve(conn):
        \(serve)
        while True:
            conn, _ = server.accept()
            threading.Thread(target=serve, args=(conn,), daemon=True).start()
        """)
    }

    /// A folder of the test's own, removed at its end.
    func temporaryFolder() throws -> String {
        let folder = NSTemporaryDirectory() + "reqtop-proxy-test-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: folder) }
        return folder
    }

    /// Runs a program to its end (at most `timeout` seconds); its status, stdout and stderr.
    func run(_ program: String, _ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = 120) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        for name in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"] { merged[name] = nil }
        merged.merge(environment) { $1 }
        process.environment = merged
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = SendableBox(Data()), errData = SendableBox(Data())
        let readers = DispatchGroup()
        for (pipe, box) in [(out, outData), (err, errData)] {
            readers.enter()
            DispatchQueue.global().async {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                box.mutate { $0 = data }
                readers.leave()
            }
        }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            XCTFail("\(program) \(arguments.joined(separator: " ")) ran past \(Int(timeout)) s")
        }
        process.waitUntilExit()
        readers.wait()
        return (process.terminationStatus, String(decoding: outData.value, as: UTF8.self), String(decoding: errData.value, as: UTF8.self))
    }

    var curl: String { "/usr/bin/curl" }

    /// A TCP socket connected to 127.0.0.1:`port` (the caller closes it), or nil.
    func connectedSocket(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Bytes sent on a raw connection to `port`, and all that came back until the peer closed
    /// it (or `wait` seconds passed).
    func rawExchange(port: Int, _ bytes: [UInt8], wait: TimeInterval = 5) -> String {
        guard let fd = connectedSocket(port: port) else { return "<cannot connect>" }
        defer { close(fd) }
        var timeout = timeval(tv_sec: Int(wait), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}
