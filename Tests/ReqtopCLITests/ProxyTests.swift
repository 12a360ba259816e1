import FaultServer
import Foundation
import Synchronization
import XCTest

/// Proxies, the same way on both transports, through a real proxy: Debian's `tinyproxy`
/// (installed by `.ci/run`), started here on loopback, its access log read back. Before,
/// `--transport nio` ignored `http_proxy` while `urlsession` (libcurl) honoured it: the same
/// command went direct or through the proxy depending on the transport.
final class ProxyTests: XCTestCase {
    private static let tinyproxy = ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// A tinyproxy on a free loopback port, stopped at the end of the test; its log path.
    private func startProxy(extra: String = "") throws -> (port: Int, log: String) {
        try Self.startTinyproxy(for: self, extra: extra)
    }

    /// A tinyproxy on a free loopback port, stopped at the end of `test`; its log path.
    static func startTinyproxy(for test: XCTestCase, extra: String = "") throws -> (port: Int, log: String) {
        guard let binary = Self.tinyproxy else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail("tinyproxy is missing: .ci/run installs it") }
            throw XCTSkip("Debian's tinyproxy is not installed here (.ci/run installs it: apt-get install tinyproxy)")
        }
        let folder = NSTemporaryDirectory() + "reqtop-proxy-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let port = try Self.freePort()
        let log = folder + "/access.log"
        try """
        Port \(port)
        Listen 127.0.0.1
        Timeout 30
        LogFile "\(log)"
        LogLevel Info
        MaxClients 20
        Allow 127.0.0.1
        \(extra)
        """.write(toFile: folder + "/tinyproxy.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-d", "-c", folder + "/tinyproxy.conf"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        test.addTeardownBlock {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: folder)
        }
        // Listening once a connection is taken.
        let end = Date().addingTimeInterval(10)
        while Date() < end, !Self.accepts(port: port) { usleep(20_000) }
        XCTAssertTrue(Self.accepts(port: port), "tinyproxy listens on \(port)")
        return (port, log)
    }

    /// A port nothing listens on now (the kernel picks it; the test binds it again at once).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// `reqtop run PLAN --no-tui` with `environment` added to this process's (proxy variables
    /// of the test process itself removed).
    private func run(_ arguments: [String], environment: [String: String]) throws -> (status: Int32, stderr: String, stdout: String) {
        let process = Process()
        process.executableURL = CommandLineTests.binary
        process.arguments = arguments
        var base = ProcessInfo.processInfo.environment
        for name in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"] {
            base[name] = nil
        }
        process.environment = base.merging(environment) { _, new in new }
        let err = Pipe()
        let out = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both as they come: a full pipe would stall the child.
        let collected = Mutex(Data())
        let reader = Thread { collected.withLock { $0 = out.fileHandleForReading.readDataToEndOfFile() } }
        reader.start()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !reader.isFinished { usleep(1000) }
        return (process.terminationStatus, String(decoding: stderr, as: UTF8.self), String(decoding: collected.withLock { $0 }, as: UTF8.self))
    }

    private func plan(_ via: String) throws -> String {
        let path = NSTemporaryDirectory() + "proxy-plan-\(via).json"
        try #"{"retry": {"maxAttempts": 1}, "requests": [{"id": "p", "url": "{{fault}}/echo?via=\#(via)"}]}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Whether the proxy's log grew, after `offset`, by the request `via` names: libcurl sends
    /// it to the proxy in absolute form; AsyncHTTPClient tunnels every request with CONNECT.
    private func proxied(_ log: String, since offset: Int, _ via: String) -> Bool {
        let text = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").utf8.dropFirst(offset)
        let added = String(decoding: text, as: UTF8.self)
        return added.contains("/echo?via=\(via) HTTP/1.1") || added.contains("): CONNECT 127.0.0.1:")
    }

    private func size(_ log: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: log)[.size]) as? NSNumber)?.intValue ?? 0
    }

    func testTheEnvironmentsProxyIsUsedOnBothTransportsAndNoProxyIsHonoured() throws {
        let (port, log) = try startProxy()
        let proxy = "http://127.0.0.1:\(port)"
        for transport in ["urlsession", "nio"] {
            var before = size(log)
            let through = try run(["run", try plan("env-\(transport)"), "--transport", transport, "--no-tui"], environment: ["http_proxy": proxy])
            XCTAssertEqual(through.status, 0, through.stderr)
            XCTAssertTrue(proxied(log, since: before, "env-\(transport)"), "\(transport) went through the proxy")
            before = size(log)
            let direct = try run(["run", try plan("direct-\(transport)"), "--transport", transport, "--no-tui"],
                                 environment: ["http_proxy": proxy, "NO_PROXY": "localhost,127.0.0.1"])
            XCTAssertEqual(direct.status, 0, direct.stderr)
            XCTAssertFalse(proxied(log, since: before, "direct-\(transport)"), "\(transport) honoured NO_PROXY")
            // curl ignores HTTP_PROXY in capitals (httpoxy): so does reqtop, on both.
            before = size(log)
            let upper = try run(["run", try plan("upper-\(transport)"), "--transport", transport, "--no-tui"], environment: ["HTTP_PROXY": proxy])
            XCTAssertEqual(upper.status, 0, upper.stderr)
            XCTAssertFalse(proxied(log, since: before, "upper-\(transport)"), "\(transport) ignored HTTP_PROXY")
        }
    }

    func testTheProxyFlagOnBothTransportsAndABadOne() throws {
        let (port, log) = try startProxy()
        for transport in ["urlsession", "nio"] {
            let before = size(log)
            let through = try run(["run", try plan("flag-\(transport)"), "--transport", transport, "--no-tui",
                                   "--proxy", "http://user:s3cret@127.0.0.1:\(port)"], environment: [:])
            XCTAssertEqual(through.status, 0, through.stderr)
            XCTAssertTrue(proxied(log, since: before, "flag-\(transport)"), "\(transport) went through --proxy")
            XCTAssertTrue(through.stderr.contains("requests go through the proxy http://%5Bredacted%5D@127.0.0.1:\(port)"), through.stderr)
            XCTAssertFalse(through.stderr.contains("s3cret"), through.stderr)
        }
        let bad = try run(["run", try plan("bad"), "--proxy", "ftp://127.0.0.1:\(port)", "--no-tui"], environment: [:])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("--proxy ftp://127.0.0.1:\(port): expected an http:// proxy URL"), bad.stderr)
    }

    /// HTTPS through the proxy: a CONNECT tunnel to the fault server speaking TLS, verified
    /// against our own authority (NIO: URLSession on Linux cannot be given the authority).
    /// The proxy and the authority come from the plan (the authority by a name relative to
    /// the plan's folder), and the `connection` event names the proxy.
    func testHTTPSGoesThroughThePlansProxyInACONNECTTunnel() throws {
        let (port, log) = try startProxy()
        let pki = try TestCertificates.make()
        defer { pki.remove() }
        let server = try FaultServer.start(tls: pki)
        defer { server.stop() }
        let path = pki.folder + "/proxy-tls-plan.json"
        try #"{"retry": {"maxAttempts": 1}, "proxy": "http://127.0.0.1:\#(port)", "tls": {"cacert": "ca.pem"},"#
            .appending(#" "requests": [{"id": "tls", "url": "\#(server.url("/status/200").absoluteString)"}]}"#)
            .write(toFile: path, atomically: true, encoding: .utf8)
        let before = size(log)
        let run = try run(["run", path, "--transport", "nio", "--no-tui"], environment: [:])
        XCTAssertEqual(run.status, 0, run.stderr)
        let added = String(decoding: ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").utf8.dropFirst(before), as: UTF8.self)
        XCTAssertTrue(added.contains("): CONNECT 127.0.0.1:\(server.port) "), added)
        XCTAssertTrue(run.stdout.contains(#""event":"connection","connection":"#) && run.stdout.contains(#""proxy":"127.0.0.1:\#(port)""#), run.stdout)

        let broken = pki.folder + "/broken-plan.json"
        try #"{"tls": {"cacert": 5}, "requests": [{"url": "https://127.0.0.1:1/"}]}"#.write(toFile: broken, atomically: true, encoding: .utf8)
        let refused = try self.run(["run", broken, "--no-tui"], environment: [:])
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.contains("tls.cacert"), refused.stderr)
    }

    /// Before: a proxy that refused the credentials (407 to CONNECT) ended the request as
    /// "-1011 bad server response". Now it says 407 and what to fix. The proxy is a few lines
    /// of Python that answers every CONNECT 407, as a proxy with BasicAuth does (tinyproxy
    /// answers 401: named as a refused tunnel).
    func testWrongProxyCredentialsAreNamedAs407() throws {
        let port = try Self.freePort()
        let script = """
        import socket
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", \(port))); s.listen(4)
        while True:
            c, _ = s.accept(); c.recv(65536)
            c.sendall(b"HTTP/1.1 407 Proxy Authentication Required\\r\\nProxy-Authenticate: Basic realm=\\"p\\"\\r\\nContent-Length: 0\\r\\n\\r\\n"); c.close()
        """
        let proxy = Process()
        proxy.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        proxy.arguments = ["python3", "-c", script]
        try proxy.run()
        defer { proxy.terminate(); proxy.waitUntilExit() }
        let end = Date().addingTimeInterval(10)
        while Date() < end, !Self.accepts(port: port) { usleep(20_000) }
        let pki = try TestCertificates.make()
        defer { pki.remove() }
        let path = pki.folder + "/proxy-auth-plan.json"
        try #"{"retry": {"maxAttempts": 1}, "proxy": "http://alice:wrong-password@127.0.0.1:\#(port)", "tls": {"cacert": "ca.pem"},"#
            .appending(#" "requests": [{"id": "tls", "url": "https://127.0.0.1:9/"}]}"#)
            .write(toFile: path, atomically: true, encoding: .utf8)
        let run = try run(["run", path, "--transport", "nio", "--no-tui"], environment: [:])
        XCTAssertEqual(run.status, 1, run.stderr)
        XCTAssert(run.stdout.contains(#""reason":"transport error -1013 (the proxy answered 407 Proxy Authentication Required"#), run.stdout)
        XCTAssertFalse(run.stdout.contains("wrong-password"), "the proxy's password is redacted")
    }

    /// Before: a plan's `tls.key` problem was named `--key`, a missing `SSL_CERT_FILE`
    /// `--cacert`.
    func testTLSSettingsAreNamedWhereTheyWereGiven() throws {
        let folder = NSTemporaryDirectory() + "tls-names-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pki = try TestCertificates.make()
        defer { pki.remove() }
        try "not a key".write(toFile: folder + "/bad-key.pem", atomically: true, encoding: .utf8)
        let plan = folder + "/plan.json"
        try #"{"tls": {"cert": "\#(pki.folder)/client.pem", "key": "bad-key.pem"}, "requests": [{"url": "https://127.0.0.1:1/"}]}"#
            .write(toFile: plan, atomically: true, encoding: .utf8)
        let key = try run(["run", plan, "--transport", "nio", "--no-tui"], environment: [:])
        XCTAssertEqual(key.status, 2)
        XCTAssert(key.stderr.contains("plan.json: tls.key \(folder)/bad-key.pem: not a PEM private key"), key.stderr)
        try #"{"requests": [{"url": "https://127.0.0.1:1/"}]}"#.write(toFile: plan, atomically: true, encoding: .utf8)
        let missing = try run(["run", plan, "--transport", "nio", "--no-tui"], environment: ["SSL_CERT_FILE": folder + "/nope.pem"])
        XCTAssertEqual(missing.status, 2)
        XCTAssert(missing.stderr.contains("SSL_CERT_FILE \(folder)/nope.pem: no such file"), missing.stderr)
    }
}
