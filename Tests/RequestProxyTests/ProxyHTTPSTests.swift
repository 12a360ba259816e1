import FaultServer
import Foundation
import NIOCore
import RequestOperations
@testable import RequestProxy
import XCTest

/// HTTPS through the proxy: decrypted with the proxy's own authority (curl and Python's
/// `requests` trusting it), tunnelled undecrypted for `--tunnel` hosts, the authority's files
/// closed to other users.
final class ProxyHTTPSTests: XCTestCase {
    private func authority() throws -> LocalCertificateAuthority {
        let folder = try temporaryFolder() + "/ca"
        let (authority, made) = try LocalCertificateAuthority.loadOrMake(in: folder)
        XCTAssertTrue(made)
        return authority
    }

    /// An HTTPS fault server with certificates made now, and proxy options with an authority
    /// of the test's own.
    private func httpsUpstream() throws -> (TestCertificates, FaultServer, ProxyOptions) {
        let pki = try TestCertificates.make()
        addTeardownBlock { pki.remove() }
        let upstream = try startFaultServer(tls: pki)
        var options = ProxyOptions()
        options.authority = try authority()
        return (pki, upstream, options)
    }

    func testCurlTrustingTheProxysAuthoritySeesTheUpstreamDecrypted() throws {
        let (pki, upstream, options) = try httpsUpstream()
        let proxy = try startProxy(options, trusting: pki.caFile)
        let url = "https://localhost:\(upstream.port)/status/200"
        let answer = try run(curl, ["-s", "-v", "--cacert", options.authority!.certificateFile, "-x", proxy.url, url])
        XCTAssertEqual(answer.stdout, "status 200\n", answer.stderr)
        // The certificate curl saw is the proxy's leaf for the host, from the proxy's authority.
        XCTAssertTrue(answer.stderr.contains("issuer: O=reqtop") || answer.stderr.contains("issuer: CN=reqtop proxy CA"), answer.stderr)
        XCTAssertTrue(answer.stderr.contains("ALPN: server accepted h2"), "curl offers h2 first, and gets it: \(answer.stderr)")
        // An IP address gets a leaf for the address.
        let byAddress = try run(curl, ["-s", "--cacert", options.authority!.certificateFile, "-x", proxy.url, "https://127.0.0.1:\(upstream.port)/status/201"])
        XCTAssertEqual(byAddress.stdout, "status 201\n", byAddress.stderr)
        // Without the authority, curl refuses: nothing is trusted silently.
        let untrusted = try run(curl, ["-s", "-x", proxy.url, url])
        XCTAssertEqual(untrusted.status, 60, "curl: peer certificate cannot be authenticated; \(untrusted.stderr)")
        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        let urls = proxy.events.events.compactMap { event -> String? in
            if case .queued(let method, let url, _, _, _, _) = event.payload { return method + " " + url }
            return nil
        }
        XCTAssertEqual(urls.sorted(), ["GET " + url, "GET https://127.0.0.1:\(upstream.port)/status/201",
                                       // The refusal of the curl without the authority is a row too.
                                       "CONNECT https://localhost:\(upstream.port)"].sorted(), "each decrypted request is an operation on its https URL")
    }

    func testALeafIsForTheConnectHostWhateverNameTheHelloAsksFor() throws {
        let (pki, upstream, options) = try httpsUpstream()
        let proxy = try startProxy(options, trusting: pki.caFile)
        // CONNECT to an address, a hello naming another host: the proxy would verify the
        // upstream for the address only, so it never vouches for the other name.
        let script = """
        import socket, ssl, sys
        proxy_port, port, ca, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
        client = socket.create_connection(("127.0.0.1", proxy_port)); client.settimeout(10)
        client.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n".encode())
        answer = b""
        while b"\\r\\n\\r\\n" not in answer: answer += client.recv(4096)
        context = ssl.create_default_context(cafile=ca)
        try:
            tls = context.wrap_socket(client, server_hostname=name)
            tls.sendall(b"GET /status/200 HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
            print(tls.recv(4096).split(b"\\r\\n")[0].decode())
        except ssl.SSLCertVerificationError as error:
            print("refused:", error.verify_message)
        """
        let evil = try run("/usr/bin/python3", ["-c", script, String(proxy.server.port), String(upstream.port), options.authority!.certificateFile, "evil.example"])
        XCTAssertTrue(evil.stdout.hasPrefix("refused: Hostname mismatch"), evil.stdout + evil.stderr)
        let same = try run("/usr/bin/python3", ["-c", script, String(proxy.server.port), String(upstream.port), options.authority!.certificateFile, "127.0.0.1"])
        XCTAssertEqual(same.stdout, "HTTP/1.1 200 OK\n", same.stderr)
    }

    func testAClientThatRefusesTheProxysCertificateIsSeenOncePerHost() throws {
        var (pki, upstream, options) = try httpsUpstream()
        let told = SendableBox([String]())
        options.onClientRefusal = { host, _, reason in told.mutate { $0.append(host + ": " + reason) } }
        let proxy = try startProxy(options, trusting: pki.caFile)
        let url = "https://localhost:\(upstream.port)/status/200"
        // curl without the authority refuses the leaf (an unknown CA alert), twice.
        for _ in 0..<2 {
            let untrusted = try run(curl, ["-s", "-x", proxy.url, url])
            XCTAssertEqual(untrusted.status, 60, untrusted.stderr)
        }
        proxy.queue.events.waitUntilDelivered()
        let reasons = proxy.events.events.compactMap { event -> String? in
            if case .finished(.failure, _, _, _, let reason) = event.payload { return reason }
            return nil
        }
        XCTAssertEqual(reasons.count, 2, "each refused tunnel is a failed row: \(reasons)")
        XCTAssertTrue(reasons.allSatisfy { $0.contains("the proxy's certificate for localhost") && $0.contains("--tunnel localhost")
            && $0.contains("reqtop proxy --ca") }, "\(reasons)")
        XCTAssertEqual(told.value.count, 1, "told once per host: \(told.value)")
        let queued = proxy.events.events.compactMap { event -> String? in
            if case .queued(let method, let url, _, _, _, _) = event.payload { return method + " " + url }
            return nil
        }
        XCTAssertEqual(Set(queued), ["CONNECT https://localhost:\(upstream.port)"])
    }

    func testAnUpstreamTheProxyCannotVerifyIsA502NamingTheTLSFailure() throws {
        let (_, upstream, options) = try httpsUpstream()
        // The proxy's upstream leg does not trust the test authority.
        let proxy = try startProxy(options)
        let answer = try run(curl, ["-s", "-i", "--cacert", options.authority!.certificateFile, "-x", proxy.url, "https://localhost:\(upstream.port)/status/200"])
        // curl -i shows the tunnel's 200, then the answer inside it.
        // (Over HTTP/2, which curl offers first: the 502 is a stream's answer.)
        XCTAssertTrue(answer.stdout.contains("\nHTTP/2 502"), answer.stdout + answer.stderr)
        XCTAssertTrue(answer.stdout.contains("error=tls_certificate_error"), answer.stdout)
        // Words for a person, not where in BoringSSL's source the error was raised.
        XCTAssertFalse(answer.stdout.contains(".build") || answer.stdout.contains(".cc:"), answer.stdout)
        XCTAssertTrue(answer.stdout.contains("(untrusted)"), answer.stdout)
    }

    func testATunnelledHostIsPassedThroughUndecrypted() throws {
        var (pki, upstream, options) = try httpsUpstream()
        options.tunnelHosts = ["localhost"]
        let proxy = try startProxy(options)
        // curl sees the upstream's own certificate (it trusts the test authority, not the proxy's).
        let answer = try run(curl, ["-s", "--cacert", pki.caFile, "-x", proxy.url, "https://localhost:\(upstream.port)/status/200"])
        XCTAssertEqual(answer.stdout, "status 200\n", answer.stderr)
        // What is inside is not seen; the tunnel is a row: CONNECT, its program, its bytes.
        let row = proxy.events.finished("c1-r1")
        XCTAssertEqual(proxy.events.operations(), ["c1-r1"])
        guard case .queued(let method, let url, _, _, _, let options)? = row.first?.payload else { return XCTFail("\(row)") }
        XCTAssertEqual(method, "CONNECT")
        XCTAssertEqual(url, "https://localhost:\(upstream.port)")
        XCTAssertTrue(options?.origin?.hasPrefix("curl ") == true, "\(String(describing: options))")
        let down = row.reduce(0) { total, event in if case .data(let bytes) = event.payload { total + bytes } else { total } }
        XCTAssertGreaterThan(down, 1000, "the TLS bytes to the client were counted")
        guard case .finished(let outcome, _, _, _, let reason)? = row.last?.payload else { return XCTFail("\(row)") }
        XCTAssertEqual(outcome, .success)
        XCTAssertTrue(reason?.hasPrefix("tunnel closed: ") == true, "\(String(describing: reason))")
    }

    /// Plain HTTP after `CONNECT` (`curl -p`, a browser's `ws://` through a proxy) is read as
    /// decrypted text is: each request an operation, to the host the `CONNECT` named.
    func testPlainHTTPAfterConnectIsReadAsHTTP() throws {
        let (_, _, options) = try httpsUpstream()
        let plain = try startFaultServer()
        let proxy = try startProxy(options)
        let answer = try run(curl, ["-s", "-p", "-x", proxy.url, "http://127.0.0.1:\(plain.port)/status/200"])
        XCTAssertEqual(answer.stdout, "status 200\n", answer.stderr)
        let row = proxy.events.finished("c1-r1")
        guard case .queued(let method, let url, _, _, _, _)? = row.first?.payload else { return XCTFail("\(row)") }
        XCTAssertEqual(method, "GET")
        XCTAssertEqual(url, "http://127.0.0.1:\(plain.port)/status/200")
        guard case .finished(let outcome, let status, _, _, _)? = row.last?.payload else { return XCTFail("\(row)") }
        XCTAssertEqual(outcome, .success)
        XCTAssertEqual(status, 200)
        // A port nothing listens on: the request's own 502, naming the refusal.
        let dead = try run(curl, ["-s", "-p", "-x", proxy.url, "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:1/status/200"])
        XCTAssertEqual(dead.stdout, "502")
    }

    /// What a client sends after `CONNECT` that is neither TLS nor HTTP (SSH, a database's
    /// protocol) is relayed as bytes to the host it asked for: a tunnel row, `tcp://host:port`.
    func testWhatIsNeitherTLSNorHTTPAfterConnectIsRelayedAsATunnel() throws {
        let (_, _, options) = try httpsUpstream()
        let echo = try startRawPythonServer(serving: """
        data = conn.recv(4096)
        conn.sendall(b"echo: " + data)
        conn.close()
        """)
        let proxy = try startProxy(options)
        let request = "CONNECT 127.0.0.1:\(echo) HTTP/1.1\r\nHost: 127.0.0.1:\(echo)\r\n\r\nSSH-2.0-OpenSSH_9.2\r\n"
        let answer = rawExchange(port: Int(proxy.server.port), Array(request.utf8))
        XCTAssertTrue(answer.hasSuffix("echo: SSH-2.0-OpenSSH_9.2\r\n"), answer)
        let row = proxy.events.finished("c1-r1")
        XCTAssertEqual(proxy.events.operations(), ["c1-r1"], "nothing inside became an operation")
        guard case .queued(let method, let url, _, _, _, _)? = row.first?.payload else { return XCTFail("\(row)") }
        XCTAssertEqual(method, "CONNECT")
        XCTAssertEqual(url, "tcp://127.0.0.1:\(echo)")
        guard case .finished(let outcome, _, _, _, let reason)? = row.last?.payload else { return XCTFail("\(row)") }
        XCTAssertEqual(outcome, .success)
        XCTAssertTrue(reason?.hasPrefix("tunnel closed: ") == true, "\(String(describing: reason))")
    }

    /// A frame that declares 2⁶⁴ − 1 bytes and sends three is no message, and three bytes:
    /// the counts say what passed, not what a hostile peer announced.
    func testAWebSocketFrameIsCountedByWhatPassedNotWhatItDeclared() {
        var messages = WebSocketMessages(limit: 100)
        var buffer = ByteBuffer(bytes: [0x82, 127] + [UInt8](repeating: 0xff, count: 8) + Array("abc".utf8))
        messages.read(buffer)
        XCTAssertEqual(messages.messages, 0)
        XCTAssertEqual(messages.payloadBytes, 3)
        var whole = WebSocketMessages(limit: 100)
        buffer = ByteBuffer(bytes: [0x81, 0x83, 1, 2, 3, 4] + zip(Array("hey".utf8), [1, 2, 3] as [UInt8]).map { $0 ^ $1 })
        whole.read(buffer)
        XCTAssertEqual(whole.messages, 1)
        XCTAssertEqual(String(decoding: whole.kept, as: UTF8.self), "hey\n", "unmasked, a text message a line")
    }

    func testTheFirstBytesSayWhatACONNECTCarries() {
        func carried(_ text: String) -> String {
            ConnectSniffer.carried(by: Array(text.utf8)).map { "\($0)" } ?? "undecided"
        }
        XCTAssertEqual(carried("GET /chat HTTP/1.1\r\n"), "http")
        XCTAssertEqual(carried("OPTIONS * HTTP/1.1"), "other", "a * target is no proxied request")
        XCTAssertEqual(carried("PRI * HTTP/2.0\r\n"), "undecided", "HTTP/2's preface, not whole yet")
        XCTAssertEqual(carried("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), "http2", "HTTP/2's preface: prior knowledge")
        XCTAssertEqual(carried("PRI * HTTP/1.1\r\n\r\nSM\r\n\r\n"), "other", "not the preface")
        XCTAssertEqual(carried("POST / HTTP/1.1\r\n"), "http", "a P that is not PRI")
        XCTAssertEqual(carried("SSH-2.0-x"), "other")
        XCTAssertEqual(carried("GE"), "undecided")
        XCTAssertEqual(carried("GET "), "undecided")
        XCTAssertEqual(carried("\u{16}\u{03}\u{01}"), "tls")
        XCTAssertEqual(carried("ABCDEFGHIJKLMNOPQ"), "other")
    }

    /// A person's cancel reaches a tunnel row as it reaches an operation: both sides are
    /// closed, curl sees its connection end at once, and the row ends cancelled by them.
    func testCancellingATunnelRowClosesItAndSaysWho() throws {
        var (pki, upstream, options) = try httpsUpstream()
        options.tunnelHosts = ["localhost"]
        let proxy = try startProxy(options)
        let curlRun = Process()
        curlRun.executableURL = URL(fileURLWithPath: curl)
        curlRun.arguments = ["-s", "--cacert", pki.caFile, "-x", proxy.url, "https://localhost:\(upstream.port)/drip?bytes=1000&duration=20000&chunks=20",
                             "-o", "/dev/null"]
        try curlRun.run()
        defer { if curlRun.isRunning { curlRun.terminate() } }
        let started = Date()
        // The row exists once the tunnel is joined (its `taskCreated`), and the drip has begun.
        while !proxy.events.events.contains(where: { if case .data = $0.payload { $0.operationID == "c1-r1" } else { false } }),
              Date().timeIntervalSince(started) < 10 { usleep(20_000) }
        let control = QueueControl(queue: proxy.queue)
        XCTAssertEqual(control.perform(.cancel(operation: "c1-r1")).outcome, .cancelled(operation: "c1-r1"))
        curlRun.waitUntilExit()
        XCTAssertNotEqual(curlRun.terminationStatus, 0, "curl saw its connection end short")
        XCTAssertLessThan(Date().timeIntervalSince(started), 15, "ended by the cancel, not by the 20 s drip")
        let row = proxy.events.finished("c1-r1")
        XCTAssertTrue(row.contains { if case .cancelled(by: "monitor") = $0.payload { true } else { false } }, "\(row)")
        guard case .finished(let outcome, _, _, _, let reason)? = row.last?.payload else { return XCTFail("\(row)") }
        XCTAssertEqual(outcome, .cancelled)
        XCTAssertTrue(reason?.hasPrefix("cancelled by monitor; tunnel closed: ") == true, "\(String(describing: reason))")
        // Once ended, it is no longer there to cancel; nor is a tunnel anything else a command acts on.
        XCTAssertEqual(control.perform(.cancel(operation: "c1-r1")).outcome, .unknownOperation(operation: "c1-r1"))
        XCTAssertEqual(control.perform(.retry(operation: "c1-r1")).outcome, .unknownOperation(operation: "c1-r1"))
    }

    func testPythonRequestsThroughTheProxy() throws {
        guard (try? run("/usr/bin/python3", ["-c", "import requests"]).status) == 0 else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail("python3-requests is missing: .ci/run installs it") }
            throw XCTSkip("Python's requests is not installed (apt-get install python3-requests)")
        }
        let (pki, upstream, options) = try httpsUpstream()
        let proxy = try startProxy(options, trusting: pki.caFile)
        let script = """
        import requests, sys
        r = requests.post(sys.argv[1], json={"hello": "proxy"}, timeout=30)
        print(r.status_code, r.json()["body"])
        """
        let answer = try run("/usr/bin/python3", ["-c", script, "https://localhost:\(upstream.port)/echo"],
                             environment: ["HTTPS_PROXY": proxy.url, "REQUESTS_CA_BUNDLE": options.authority!.certificateFile])
        XCTAssertEqual(answer.stdout, "200 {\"hello\": \"proxy\"}\n", answer.stderr)
    }

    func testTheAuthoritysKeyIsClosedToOtherUsersAndKeptAcrossStarts() throws {
        let folder = try temporaryFolder() + "/ca"
        let (first, made) = try LocalCertificateAuthority.loadOrMake(in: folder)
        XCTAssertTrue(made)
        var info = stat()
        XCTAssertEqual(stat(folder, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o700)
        XCTAssertEqual(stat(first.keyFile, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        let (second, madeAgain) = try LocalCertificateAuthority.loadOrMake(in: folder)
        XCTAssertFalse(madeAgain)
        XCTAssertEqual(first.certificate, second.certificate)
        // A key someone opened to others is refused by name.
        chmod(first.keyFile, 0o644)
        XCTAssertThrowsError(try LocalCertificateAuthority.loadOrMake(in: folder)) { error in
            XCTAssertTrue("\(error)".contains("ca-key.pem is open to other users"), "\(error)")
        }
    }
}
