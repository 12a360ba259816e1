import Foundation
import Synchronization
import XCTest

/// A headless `reqtop proxy` a test started on its own port: signalled and waited for apart
/// (a test of how it stops signals it while requests are in flight), or both at once.
final class LaunchedProxy {
    let port: Int
    private let process: Process
    private let output = DispatchGroup()
    private let printed = Printed()

    /// What it printed, read on threads of their own while it runs.
    private final class Printed: Sendable {
        let stdout = Mutex(Data()), stderr = Mutex(Data())
    }

    fileprivate init(port: Int, process: Process, out: Pipe, err: Pipe) {
        self.port = port
        self.process = process
        let printed = printed
        DispatchQueue.global().async(group: output) { let data = out.fileHandleForReading.readDataToEndOfFile(); printed.stdout.withLock { $0 = data } }
        DispatchQueue.global().async(group: output) { let data = err.fileHandleForReading.readDataToEndOfFile(); printed.stderr.withLock { $0 = data } }
    }

    var address: String { "http://127.0.0.1:\(port)" }
    var isRunning: Bool { process.isRunning }
    var pid: Int32 { process.processIdentifier }

    func signal(_ number: Int32 = SIGTERM) {
        kill(process.processIdentifier, number)
    }

    /// How it ended and what it printed, once it has.
    func waitForEnd() -> ReqtopRun {
        process.waitUntilExit()
        output.wait()
        return ReqtopRun(status: process.terminationStatus, stdout: String(decoding: printed.stdout.withLock { $0 }, as: UTF8.self),
                         stderr: String(decoding: printed.stderr.withLock { $0 }, as: UTF8.self))
    }

    /// SIGTERM, and how it ended.
    func stop() -> ReqtopRun {
        signal()
        return waitForEnd()
    }
}

extension XCTestCase {
    /// A headless `reqtop proxy` on its own port, as the unprivileged user when asked,
    /// listening once this returns.
    /// - Parameter softLimit: the soft limit on open files it starts with (`ulimit -Sn`).
    func startProxy(_ extra: [String], unprivileged: Bool, home: String, softLimit: Int? = nil) throws -> LaunchedProxy {
        let port = try ProxyTests.freePort()
        let process = Process()
        let arguments = ["proxy", "--no-tui", "--port", String(port)] + extra
        if unprivileged, UnprivilegedUser.isRoot {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = UnprivilegedUser.setprivArguments + [try UnprivilegedUser.binary()] + arguments
        } else if let softLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -Sn \(softLimit) && exec \"$0\" \"$@\"", CommandLineTests.binary.path] + arguments
        } else {
            process.executableURL = CommandLineTests.binary
            process.arguments = arguments
        }
        process.environment = ProcessInfo.processInfo.environment.merging(["HOME": home, "XDG_CONFIG_HOME": ""]) { $1 }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let proxy = LaunchedProxy(port: port, process: process, out: out, err: err)
        addTeardownBlock { if process.isRunning { process.terminate() } }
        // Listening once a connection is taken.
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, process.isRunning, !Self.accepts(port: port) {
            usleep(50_000)
        }
        return proxy
    }

    /// `startProxy`, with `stop` (SIGTERM) returning how it ended and what it printed.
    func launchProxy(_ extra: [String], unprivileged: Bool, home: String, softLimit: Int? = nil) throws -> (port: Int, stop: () -> ReqtopRun) {
        let proxy = try startProxy(extra, unprivileged: unprivileged, home: home, softLimit: softLimit)
        return (proxy.port, proxy.stop)
    }

    /// Whether something on 127.0.0.1 takes a connection on `port`.
    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// curl's output; `unprivileged`: as the user the proxy runs as (it serves only its own).
    func curl(_ arguments: [String], unprivileged: Bool = false) throws -> String {
        try Self.curl(arguments, unprivileged: unprivileged)
    }

    static func curl(_ arguments: [String], unprivileged: Bool = false) throws -> String {
        let curl = Process()
        if unprivileged, UnprivilegedUser.isRoot {
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            curl.arguments = UnprivilegedUser.setprivArguments + ["/usr/bin/curl", "-s", "--max-time", "20"] + arguments
        } else {
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            curl.arguments = ["-s", "--max-time", "20"] + arguments
        }
        curl.environment = [:]
        let pipe = Pipe()
        curl.standardOutput = pipe
        try curl.run()
        let answer = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        curl.waitUntilExit()
        return answer
    }

    /// Runs `work` on a thread of its own (a request held while the test goes on); the
    /// returned closure waits up to 40 s for what it gave.
    func inBackground(_ work: @escaping @Sendable () -> String) -> () -> String {
        let done = DispatchSemaphore(value: 0)
        let given = Mutex("")
        Thread {
            let text = work()
            given.withLock { $0 = text }
            done.signal()
        }.start()
        return {
            _ = done.wait(timeout: .now() + 40)
            return given.withLock { $0 }
        }
    }
}
