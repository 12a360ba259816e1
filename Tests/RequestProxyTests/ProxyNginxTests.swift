import FaultServer
import Foundation
import RequestOperations
@testable import RequestProxy
import XCTest

/// Debian's nginx as the upstream, a server nobody here wrote, over TLS with HTTP/2: the proxy's
/// upstream leg speaks h2 to it (the row says so), and the trailers nginx adds after a body
/// (`add_trailer`, sent over HTTP/2 only) reach the client and the row.
final class ProxyNginxTests: XCTestCase {
    /// nginx on a free loopback port, one process (no master, no daemon, files in a folder of
    /// the test's own), stopped at the end of the test. Its port.
    private func startNginx(_ pki: TestCertificates) throws -> Int {
        let nginx = "/usr/sbin/nginx"
        guard FileManager.default.isExecutableFile(atPath: nginx) else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail("nginx is missing: .ci/run installs it") }
            throw XCTSkip("nginx is not installed")
        }
        let prefix = try temporaryFolder()
        try FileManager.default.createDirectory(atPath: prefix + "/www", withIntermediateDirectories: true)
        try "<h1>served by nginx</h1>\n".write(toFile: prefix + "/www/index.html", atomically: true, encoding: .utf8)
        let socket = Socket.freePort()
        try """
        daemon off; master_process off; worker_processes 1;
        pid \(prefix)/nginx.pid; error_log \(prefix)/error.log;
        events { worker_connections 64; }
        http {
            access_log off;
            client_body_temp_path \(prefix)/body; proxy_temp_path \(prefix)/proxy; fastcgi_temp_path \(prefix)/fastcgi;
            uwsgi_temp_path \(prefix)/uwsgi; scgi_temp_path \(prefix)/scgi;
            server {
                listen 127.0.0.1:\(socket) ssl http2;
                ssl_certificate \(pki.serverCertificateFile); ssl_certificate_key \(pki.serverKeyFile);
                root \(prefix)/www;
                location = /index.html { add_trailer X-Checksum "sha-256=made-up" always; add_trailer X-Second two always; }
            }
        }
        """.write(toFile: prefix + "/nginx.conf", atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-p", prefix, "-c", prefix + "/nginx.conf", "-e", prefix + "/error.log"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        addTeardownBlock { process.terminate(); process.waitUntilExit() }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, !Socket.accepts(port: socket) { usleep(50_000) }
        XCTAssertTrue(Socket.accepts(port: socket), (try? String(contentsOfFile: prefix + "/error.log", encoding: .utf8)) ?? "nginx did not start")
        return socket
    }

    func testTheUpstreamLegSpeaksHTTP2ToNginxAndItsTrailersReachTheClient() throws {
        let pki = try TestCertificates.make()
        addTeardownBlock { pki.remove() }
        let port = try startNginx(pki)
        var options = ProxyOptions()
        options.authority = try LocalCertificateAuthority.loadOrMake(in: try temporaryFolder() + "/ca").0
        let proxy = try startProxy(options, trusting: pki.caFile)
        let url = "https://localhost:\(port)/index.html"
        let answer = try run(curl, ["-s", "--http2", "--cacert", options.authority!.certificateFile, "-x", proxy.url, url])
        XCTAssertEqual(answer.stdout, "<h1>served by nginx</h1>\n", answer.stderr)
        // curl shows no trailers; Python's h2 does.
        let streamed = try runH2(proxy: proxy, port: port, mode: "tls:" + options.authority!.certificateFile, requests: ["GET /index.html"])
        XCTAssertEqual(streamed.streams[1]?.bytes, 25)
        XCTAssertEqual(streamed.streams[1]?.trailers, ["x-checksum: sha-256=made-up", "x-second: two"], "nginx's trailers reached the client: \(streamed)")

        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        let id = try XCTUnwrap(proxy.events.events.first { event in
            if case .queued(_, let queued, _, _, _, _) = event.payload { return queued == url }
            return false
        }?.operationID)
        let events = proxy.events.finished(id)
        let version = events.lazy.compactMap { event -> String? in if case .response(_, _, _, let version) = event.payload { version } else { nil } }.first
        XCTAssertEqual(version, "HTTP/2.0", "the upstream leg took h2 from nginx")
        let trailers = events.compactMap { event -> String? in
            if case .trailers(.response, let fields) = event.payload { return fields.map { "\($0.name.rawName): \($0.value)" }.joined(separator: "; ") }
            return nil
        }
        XCTAssertEqual(trailers, ["x-checksum: sha-256=made-up; x-second: two"])

        // A client that names a task in the tap's own field gets no say: the field never
        // leaves the proxy, and its own answer's trailers stay its own.
        let hostile = try run(curl, ["-s", "--http2", "--cacert", options.authority!.certificateFile, "-x", proxy.url,
                                     "-H", "x-reqtop-trailers-for: 1", url])
        XCTAssertEqual(hostile.stdout, "<h1>served by nginx</h1>\n", hostile.stderr)
        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        let ids = proxy.events.events.compactMap { event -> String? in
            if case .queued(_, let queued, _, _, _, _) = event.payload, queued == url { return event.operationID }
            return nil
        }
        let last = try XCTUnwrap(ids.last)
        let own = proxy.events.finished(last).compactMap { event -> Int? in if case .trailers(.response, let fields) = event.payload { fields.count } else { nil } }
        XCTAssertEqual(own, [2], "the hostile request's answer kept its own trailers")
        let first = proxy.events.finished(ids[0]).filter { if case .trailers = $0.payload { true } else { false } }
        XCTAssertEqual(first.count, 1, "the first request got no second set of trailers")
    }
}

/// A free loopback port, and whether something listens on one.
private enum Socket {
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
