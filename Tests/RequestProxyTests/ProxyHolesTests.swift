import FaultServer
import Foundation
import NIOCore
import RequestOperations
@testable import RequestProxy
@testable import RequestTransportNIO
import XCTest

/// What a hostile or unlucky client found in the proxy, each kept closed: no thread waits on
/// the network for an upload, a request aimed at the proxy is refused however its address is
/// spelt, a body that stops coming is not held forever.
final class ProxyHolesTests: XCTestCase {
    /// A Python server that answers every request 413 as soon as its head has come, without
    /// reading its body, and closes: what nginx does with a body over `client_max_body_size`.
    private func startEarlyRefuser() throws -> Int {
        try startRawPythonServer(serving: """
        data = b""
        while b"\\r\\n\\r\\n" not in data:
            more = conn.recv(65536)
            if not more: return conn.close()
            data += more
        conn.sendall(b"HTTP/1.1 413 Payload Too Large\\r\\nContent-Length: 9\\r\\nConnection: close\\r\\n\\r\\ntoo large")
        conn.shutdown(socket.SHUT_WR)
        conn.close()
        """)
    }

    func testStreamedUploadsAnsweredEarlyGetTheirAnswerAndTheProxyServesOn() throws {
        let refuser = try startEarlyRefuser()
        let upstream = try startFaultServer()
        let proxy = try startProxy()
        let folder = try temporaryFolder()
        let file = folder + "/upload.bin"
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data(repeating: 0x61, count: 8 << 20)))
        // Three at once, chunked and with a length past the whole-body limit: each used to
        // park a thread on the client's socket and block an event loop for good.
        let url = "http://127.0.0.1:\(refuser)/upload"
        let one = "\(curl) -s -m 30 -o /dev/null -w '%{http_code}\\n' -x \(proxy.url) --data-binary @\(file)"
        let three = "\(one) -H 'Transfer-Encoding: chunked' \(url) & \(one) \(url) & \(one) -H 'Transfer-Encoding: chunked' \(url) & wait"
        let answers = try run("/bin/sh", ["-c", three], timeout: 90)
        XCTAssertEqual(answers.stdout, "413\n413\n413\n", answers.stderr)
        // Clients that send part of the body and wait for an early answer before the rest
        // (more than the event loops): each is answered at once, then its connection closed.
        for _ in 0..<3 {
            let head = "POST http://127.0.0.1:\(refuser)/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"
            let answer = rawExchange(port: proxy.server.port, Array(head.utf8) + [UInt8](repeating: 0x61, count: 100_000), wait: 10)
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 413"), answer)
            XCTAssertTrue(answer.contains("Connection: close") && answer.hasSuffix("too large"), answer)
        }
        // Still serving, every event loop free.
        let after = try run(curl, ["-s", "-m", "10", "-x", proxy.url, upstream.baseURL.absoluteString + "/status/200"])
        XCTAssertEqual(after.stdout, "status 200\n", after.stderr)
    }

    func testARequestAimedAtTheProxyIsRefusedHoweverItsAddressIsSpelt() throws {
        let proxy = try startProxy()
        let port = proxy.server.port
        for host in ["127.0.0.1", "127.1", "2130706433", "0x7f000001", "127.0.0.2", "[::ffff:127.0.0.1]", "[::1]", "localhost", "LOCALHOST.", "a.localhost"] {
            let answer = rawExchange(port: port, Array("GET http://\(host):\(port)/ HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 508"), "\(host): \(answer.prefix(200))")
            let tunnel = rawExchange(port: port, Array("CONNECT \(host):\(port) HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            XCTAssertTrue(tunnel.hasPrefix("HTTP/1.1 508"), "CONNECT \(host): \(tunnel.prefix(200))")
        }
        // Another port of the same address is not the proxy.
        XCTAssertFalse(ProxySelf(host: "127.0.0.1", port: port).isReached(host: "127.1", port: port + 1))
        XCTAssertFalse(ProxySelf(host: "127.0.0.1", port: port).isReached(host: "example.com", port: port))
    }

    func testAProxyOnEveryAddressKnowsItsOwnAddresses() {
        let itself = ProxySelf(host: "0.0.0.0", port: 8080)
        XCTAssertTrue(itself.isReached(host: "0.0.0.0", port: 8080))
        XCTAssertTrue(itself.isReached(host: ProcessInfo.processInfo.hostName, port: 8080))
        XCTAssertTrue(itself.isReached(host: "127.0.0.1", port: 8080))
        XCTAssertFalse(itself.isReached(host: "192.0.2.1", port: 8080), "an address of no interface here")
    }

    func testABodyThatStopsComingClosesItsConnection() throws {
        let upstream = try startFaultServer()
        var options = ProxyOptions()
        options.requestBodyTimeout = 1
        let proxy = try startProxy(options)
        let started = Date()
        // 10 bytes of 1,000,000, then nothing: chunked streams, a length over 64 KiB too.
        for head in ["Transfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n", "Content-Length: 1000000\r\n\r\n0123456789"] {
            let answer = rawExchange(port: proxy.server.port, Array("POST \(upstream.baseURL.absoluteString)/echo HTTP/1.1\r\nHost: x\r\n\(head)".utf8), wait: 20)
            XCTAssertFalse(answer.contains("200 OK"), answer)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "closed at the body's deadline, not the idle limit")
        proxy.queue.waitUntilAllOperationsAreFinished()
        // A slow but moving body is not cut: curl's upload limited to 200 KB/s for about 3 s.
        let folder = try temporaryFolder()
        XCTAssertTrue(FileManager.default.createFile(atPath: folder + "/body", contents: Data(repeating: 0x62, count: 600_000)))
        let slow = try run(curl, ["-s", "-x", proxy.url, "--limit-rate", "200k", "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + folder + "/body",
                                  "-o", "/dev/null", "-w", "%{http_code}", upstream.baseURL.absoluteString + "/echo"])
        XCTAssertEqual(slow.stdout, "200", slow.stderr)
    }

    /// An upstream that refuses every upgrade with a 403 whose body is what it read of the
    /// request (head and body), and logs to stderr anything that comes after on the connection.
    private func startUpgradeRefuser() throws -> Int {
        try startRawPythonServer(serving: """
        data = b""
        while b"\\r\\n\\r\\n" not in data:
            more = conn.recv(65536)
            if not more: return conn.close()
            data += more
        head, body = data.split(b"\\r\\n\\r\\n", 1)
        length = [int(l.split(b":")[1]) for l in head.split(b"\\r\\n") if l.lower().startswith(b"content-length:")]
        while length and len(body) < length[0]: body += conn.recv(65536)
        said = (head + b"|" + body).replace(b"\\r\\n", b";")
        conn.sendall(b"HTTP/1.1 403 Forbidden\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (len(said), said))
        conn.settimeout(3)
        try:
            later = conn.recv(65536)
            if later: conn.sendall(b"LEAKED " + later)
        except Exception: pass
        conn.close()
        """)
    }

    func testARefusedUpgradeIsAnAnswerNotATunnel() throws {
        let upstream = try startUpgradeRefuser()
        var options = ProxyOptions()
        options.credentials = ProxyCredentials("alice:secret")
        let proxy = try startProxy(options)
        let authorization = "Proxy-Authorization: Basic \(Data("alice:secret".utf8).base64EncodedString())\r\n"
        let first = "GET http://127.0.0.1:\(upstream)/chat HTTP/1.1\r\nHost: x\r\n\(authorization)Upgrade: websocket\r\nConnection: Upgrade\r\n"
            + "X-Zeta: 1\r\nContent-Length: 5\r\n\r\nhello"
        // A second request right behind it, as a keep-alive client sends: it must not reach
        // the upstream as raw bytes (past the monitor, with the proxy's credentials).
        let second = "GET http://127.0.0.1:\(upstream)/second HTTP/1.1\r\nHost: x\r\n\(authorization)\r\n"
        let answer = rawExchange(port: proxy.server.port, Array((first + second).utf8), wait: 10)
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 403"), answer)
        XCTAssertTrue(answer.contains("Connection: close"), answer)
        // As sent, but for the `Host` naming another host than the target: the target's, in its place.
        XCTAssertTrue(answer.contains("GET /chat HTTP/1.1;Host: 127.0.0.1:\(upstream);Upgrade: websocket;Connection: Upgrade;X-Zeta: 1;Content-Length: 5|hello"),
                      "the request as sent, its body too: \(answer)")
        XCTAssertFalse(answer.contains("LEAKED"), answer)
        XCTAssertFalse(answer.contains("Proxy-Authorization"), answer)
        proxy.queue.events.waitUntilDelivered()
        let finished = proxy.events.events.compactMap { event -> Int? in
            if case .finished(_, let status, _, _, _) = event.payload { return status }
            return nil
        }
        XCTAssertEqual(finished, [403], "the row says what the upstream answered")
    }

    func testAnUnsolicited101IsNotPassedOn() throws {
        let upstream = try startRawPythonServer(serving: """
        data = b""
        while b"\\r\\n\\r\\n" not in data: data += conn.recv(4096)
        conn.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: surprise\\r\\nConnection: Upgrade\\r\\n\\r\\nraw bytes")
        """)
        let proxy = try startProxy()
        let result = try run(curl, ["-s", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy.url, "http://127.0.0.1:\(upstream)/plain"])
        XCTAssertEqual(result.stdout, "502", "a 101 to a request that asked for no upgrade is the upstream's error, told at once: \(result.stderr)")
    }

    private struct Described: Error, CustomStringConvertible {
        let description: String
    }

    func testAnErrorsWordsLeaveOutWhereInTheSourceItWasRaised() {
        let error = Described(description: "handshakeFailed(NIOSSL.BoringSSLError.sslError([Error: 268435581 error:1000007d:SSL routines:"
            + "OPENSSL_internal:CERTIFICATE_VERIFY_FAILED at /work/main/.build/checkouts/swift-nio-ssl/Sources/CNIOBoringSSL/ssl/handshake.cc:320]))")
        XCTAssertEqual(NIOErrorMapping.words(of: error),
                       "handshakeFailed(NIOSSL.BoringSSLError.sslError([Error: 268435581 error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED]))")
        XCTAssertEqual(NIOErrorMapping.words(of: Described(description: "connection reset (errno: 104)")), "connection reset (errno: 104)")
        // NIO's IOError has a `)` too many after the system's words; a bracket of the text's own is kept.
        XCTAssertEqual(NIOErrorMapping.words(of: IOError(errnoCode: ECONNREFUSED, reason: "connection reset (error set)")),
                       "connection reset (error set): Connection refused (errno: \(ECONNREFUSED))")
        XCTAssertEqual(NIOErrorMapping.words(of: Described(description: "connect (to 10.0.0.1) (errno: 111)")), "connect (to 10.0.0.1) (errno: 111)")
        // A long message is cut at a word and marked, in the Proxy-Status header.
        let long = String(repeating: "word ", count: 100)
        let quoted = ProxyFailureAnswer.quoted(long)
        XCTAssertTrue(quoted.hasSuffix("word..."), quoted)
        XCTAssertLessThanOrEqual(quoted.count, 300)
    }

    func testATransferCodingTheProxyCannotFrameAgainIsRefusedNotDropped() throws {
        // The upstream answers gzip, chunked: passed on as chunked alone, the client would
        // take gzip bytes for the body.
        let upstream = try startRawPythonServer(serving: """
        data = b""
        while b"\\r\\n\\r\\n" not in data: data += conn.recv(4096)
        body = gzip.compress(b"hello")
        conn.sendall(b"HTTP/1.1 200 OK\\r\\nTransfer-Encoding: gzip, chunked\\r\\n\\r\\n%x\\r\\n%s\\r\\n0\\r\\n\\r\\n" % (len(body), body))
        conn.close()
        """)
        let proxy = try startProxy()
        let answer = try run(curl, ["-s", "-m", "10", "-i", "-x", proxy.url, "http://127.0.0.1:\(upstream)/coded"])
        XCTAssertTrue(answer.stdout.hasPrefix("HTTP/1.1 502"), answer.stdout + answer.stderr)
        XCTAssertTrue(answer.stdout.contains("transfer coding gzip"), answer.stdout)
        // A client's request with one: 501, nothing sent upstream.
        let request = rawExchange(port: proxy.server.port, Array(("POST http://127.0.0.1:\(upstream)/ HTTP/1.1\r\nHost: x\r\n"
            + "Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n").utf8))
        XCTAssertTrue(request.hasPrefix("HTTP/1.1 501"), request)
    }
}
