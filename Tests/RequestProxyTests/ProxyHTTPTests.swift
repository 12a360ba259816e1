import FaultServer
import Foundation
import RequestOperations
import RequestProxy
import XCTest

/// Plain http through the proxy with curl, a real client: answers pass as they came, each
/// request is one operation named by its connection and number, and what the proxy cannot
/// pass on is said in a status and a Proxy-Status header.
final class ProxyHTTPTests: XCTestCase {
    func testCurlGetsTheUpstreamsAnswersAndEachRequestIsAnOperation() throws {
        let upstream = try startFaultServer()
        let proxy = try startProxy()
        let ok = try run(curl, ["-s", "-i", "-x", proxy.url, upstream.baseURL.absoluteString + "/status/200"])
        XCTAssertTrue(ok.stdout.hasPrefix("HTTP/1.1 200"), ok.stdout)
        XCTAssertTrue(ok.stdout.hasSuffix("status 200\n"), ok.stdout)
        // An error page is the upstream's answer, passed on whole (not the proxy's 502).
        let missing = try run(curl, ["-s", "-i", "-x", proxy.url, upstream.baseURL.absoluteString + "/status/404"])
        XCTAssertTrue(missing.stdout.hasPrefix("HTTP/1.1 404"), missing.stdout)
        XCTAssertTrue(missing.stdout.hasSuffix("status 404\n"), missing.stdout)
        XCTAssertFalse(missing.stdout.contains("Proxy-Status"), missing.stdout)
        // Two requests on one connection: c<n>-r1 and c<n>-r2.
        let two = try run(curl, ["-s", "-x", proxy.url, upstream.baseURL.absoluteString + "/status/200", upstream.baseURL.absoluteString + "/status/201"])
        XCTAssertEqual(two.stdout, "status 200\nstatus 201\n")
        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        let ids = proxy.events.operations()
        XCTAssertEqual(ids.count, 4, "\(ids)")
        XCTAssertTrue(ids.contains("c3-r1") && ids.contains("c3-r2"), "\(ids)")
        // One attempt, whatever the answer: the proxy never sends a request twice on its own.
        let finished = proxy.events.events.compactMap { event -> (String, Int?, Int)? in
            if case .finished(_, let status, let attempts, _, _) = event.payload { return (event.operationID, status, attempts) }
            return nil
        }
        XCTAssertEqual(finished.first { $0.0 == "c2-r1" }?.1, 404)
        // Each names the program that sent it, as `ss -p` finds it: curl and its pid.
        let origins = proxy.events.events.compactMap { event -> String? in
            if case .queued(_, _, _, _, _, let options) = event.payload { return options?.origin }
            return nil
        }
        XCTAssertEqual(origins.count, 4, "\(origins)")
        XCTAssertTrue(origins.allSatisfy { $0.hasPrefix("curl ") && Int($0.dropFirst(5)) != nil }, "\(origins)")
        XCTAssertTrue(finished.allSatisfy { $0.2 == 1 }, "\(finished)")
    }

    /// `reqtop proxy` binds its port before its recording and its session listen and accepts
    /// once they do: a client that connects in between waits in the backlog and is served
    /// then, its request an operation like any other (it was served before anything listened,
    /// and went unrecorded).
    func testAClientConnectingBeforeTheProxyAcceptsWaitsAndIsServed() throws {
        let fault = try startFaultServer()
        let proxy = try startProxy(accepting: false)
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-s", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy.url, fault.baseURL.absoluteString + "/status/200"]
        let out = Pipe()
        curl.standardOutput = out
        try curl.run()
        usleep(500_000)
        XCTAssertTrue(curl.isRunning, "not served before accept()")
        XCTAssertTrue(proxy.events.events.isEmpty)
        proxy.server.accept()
        let code = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        curl.waitUntilExit()
        XCTAssertEqual(code, "200")
        let id = try XCTUnwrap(proxy.events.firstOperation())
        XCTAssertTrue(proxy.events.finished(id).contains { if case .finished = $0.payload { true } else { false } })
    }

    func testRedirectsAndEncodedBodiesPassAsTheyCame() throws {
        let upstream = try startFaultServer()
        let proxy = try startProxy()
        let redirect = try run(curl, ["-s", "-i", "-x", proxy.url, upstream.baseURL.absoluteString + "/redirect/2"])
        XCTAssertTrue(redirect.stdout.hasPrefix("HTTP/1.1 302"), "the client follows a redirect, not the proxy: \(redirect.stdout)")
        // Wherever it points: an app's own scheme (an OAuth answer) or `file:` reach the client
        // as the server wrote them; the proxy follows none, so none chooses anything here.
        for location in ["com.example.app://oauth?code=abc", "file:///etc/passwd"] {
            let query = location.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let other = try run(curl, ["-s", "-i", "-x", proxy.url, upstream.baseURL.absoluteString + "/redirect-to?url=" + query])
            XCTAssertTrue(other.stdout.hasPrefix("HTTP/1.1 302"), "\(location): \(other.stdout)")
            XCTAssertTrue(other.stdout.contains("Location: \(location)\r\n"), "\(location): \(other.stdout)")
        }
        // A gzip answer reaches the client as gzip, its length true to the bytes, and decodes
        // to what the upstream encoded.
        let head = try run(curl, ["-s", "-D", "-", "-o", "/dev/null", "-x", proxy.url, upstream.baseURL.absoluteString + "/gzip/5000"])
        XCTAssertTrue(head.stdout.lowercased().contains("content-encoding: gzip"), head.stdout)
        let decoded = try run("/bin/sh", ["-c", "\(curl) -s --compressed -x \(proxy.url) \(upstream.baseURL.absoluteString)/gzip/5000 | wc -c; \(curl) -s --compressed -x \(proxy.url) \(upstream.baseURL.absoluteString)/gzip/5000 | sha256sum"])
        let plain = try run("/bin/sh", ["-c", "\(curl) -s \(upstream.baseURL.absoluteString)/bytes/5000?seed=0 | wc -c; \(curl) -s \(upstream.baseURL.absoluteString)/bytes/5000?seed=0 | sha256sum"])
        XCTAssertTrue(decoded.stdout.hasPrefix("5000\n"), decoded.stdout)
        XCTAssertEqual(decoded.stdout, plain.stdout)
    }

    func testWhatTheProxyCannotPassOnIsNamed() throws {
        let proxy = try startProxy()
        // A dead port: 502, Proxy-Status connection_refused.
        let dead = try run(curl, ["-s", "-i", "-x", proxy.url, "http://127.0.0.1:1/"])
        XCTAssertTrue(dead.stdout.hasPrefix("HTTP/1.1 502"), dead.stdout)
        XCTAssertTrue(dead.stdout.contains("Proxy-Status: reqtop; error=connection_refused"), dead.stdout)
        // Aimed at the proxy itself: refused, not looped.
        let loop = try run(curl, ["-s", "-i", "-x", proxy.url, "\(proxy.url)/anything"])
        XCTAssertTrue(loop.stdout.hasPrefix("HTTP/1.1 508"), loop.stdout)
        XCTAssertTrue(loop.stdout.contains("error=proxy_loop_detected"), loop.stdout)
    }

    func testCredentialsAreRequiredWhenSet() throws {
        let upstream = try startFaultServer()
        var options = ProxyOptions()
        options.credentials = ProxyCredentials("alice:s3cret")
        let proxy = try startProxy(options)
        let without = try run(curl, ["-s", "-i", "-x", proxy.url, upstream.baseURL.absoluteString + "/status/200"])
        XCTAssertTrue(without.stdout.hasPrefix("HTTP/1.1 407"), without.stdout)
        XCTAssertTrue(without.stdout.contains("Proxy-Authenticate: Basic"), without.stdout)
        let wrong = try run(curl, ["-s", "-i", "-x", proxy.url, "-U", "alice:guess", upstream.baseURL.absoluteString + "/status/200"])
        XCTAssertTrue(wrong.stdout.hasPrefix("HTTP/1.1 407"), wrong.stdout)
        let right = try run(curl, ["-s", "-x", proxy.url, "-U", "alice:s3cret", upstream.baseURL.absoluteString + "/echo"])
        XCTAssertTrue(right.stdout.contains("\"method\":\"GET\""), right.stdout)
        // The proxy's credentials are the proxy's: they never reach the upstream.
        XCTAssertFalse(right.stdout.lowercased().contains("proxy-authorization"), right.stdout)
        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        // The two refused are rows that say so (ProxyRefusalRowTests); only the third was sent.
        XCTAssertEqual(proxy.events.operations().count, 3)
        let sent = Set(proxy.events.events.filter { if case .sent = $0.payload { true } else { false } }.map(\.operationID))
        XCTAssertEqual(sent.count, 1, "refused requests are not sent")
        let refused = proxy.events.events.filter { if case .finished(_, 407, _, _, "refused by the proxy: proxy credentials required") = $0.payload { true } else { false } }
        XCTAssertEqual(refused.count, 2)
    }

    func testHopByHopHeadersStayOnTheirHop() throws {
        let upstream = try startFaultServer()
        let proxy = try startProxy()
        let echoed = try run(curl, ["-s", "-x", proxy.url, "-H", "Connection: X-Secret-Hop", "-H", "X-Secret-Hop: 1",
                                    "-H", "Keep-Alive: timeout=5", "-H", "X-Kept: yes", upstream.baseURL.absoluteString + "/echo"])
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(echoed.stdout.utf8)) as? [String: Any], echoed.stdout)
        let headers = try XCTUnwrap(object["headers"] as? [String: String])
        XCTAssertEqual(headers["x-kept"], "yes")
        XCTAssertNil(headers["x-secret-hop"], "a header Connection names is the hop's")
        XCTAssertNil(headers["keep-alive"])
        XCTAssertNil(headers["proxy-connection"])
    }
}

/// A header an upstream sends twice reaches the client twice: two cookies joined by ", " are
/// one broken cookie to a client (an `Expires` date has a comma of its own).
final class ProxyRepeatedHeaderTests: XCTestCase {
    func testTwoSetCookiesReachTheClientAsTwo() throws {
        let script = """
        import http.server
        class Two(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_GET(self):
                status = 200 if self.path == "/ok" else 401
                self.send_response(status)
                self.send_header("Set-Cookie", "a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT; Path=/")
                self.send_header("Set-Cookie", "b=2; Path=/")
                self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
            def log_message(self, *args): pass
        server = http.server.HTTPServer(("127.0.0.1", 0), Two)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """
        let port = try startPythonServer(script)
        let proxy = try startProxy()
        // A streamed (valid) answer and an error answer passed whole: both keep the two.
        for path in ["/ok", "/denied"] {
            let answer = try run(curl, ["-s", "-i", "-x", proxy.url, "http://127.0.0.1:\(port)\(path)"])
            let cookies = answer.stdout.split(separator: "\r\n").filter { $0.lowercased().hasPrefix("set-cookie:") }
            XCTAssertEqual(cookies, ["Set-Cookie: a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT; Path=/", "Set-Cookie: b=2; Path=/"], "\(path): \(answer.stdout)")
        }
    }
}
