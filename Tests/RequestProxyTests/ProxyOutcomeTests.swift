import FaultServer
import Foundation
import RequestOperations
import RequestProxy
import XCTest

/// In a transparent proxy an answer passed to the client is not a failure: a 3xx, a 304 or a
/// 404 ends `relayed`; a failure is what the client got no answer for.
final class ProxyOutcomeTests: XCTestCase {
    func testAnswersOtherThan2xxEndRelayedAndOnlyNoAnswerIsAFailure() throws {
        let upstream = try startFaultServer()
        let proxy = try startProxy()
        let base = upstream.baseURL.absoluteString
        for (path, code) in [("/status/200", "200"), ("/status/404", "404"), ("/status/304", "304"), ("/status/302", "302"), ("/status/503", "503")] {
            let answer = try run(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy.url, base + path])
            XCTAssertEqual(answer.stdout, code, path)
        }
        // Nobody listens there: the client gets the proxy's 502, and that is a failure.
        let refused = try run(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy.url, "http://127.0.0.1:1/"])
        XCTAssertEqual(refused.stdout, "502")
        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        let outcomes = proxy.events.events.compactMap { event -> String? in
            if case .finished(let outcome, let status, _, _, _) = event.payload { return "\(status.map(String.init) ?? "-") \(outcome.rawValue)" }
            return nil
        }
        XCTAssertEqual(outcomes.sorted(), ["- failure", "200 success", "302 relayed", "304 relayed", "404 relayed", "503 relayed"])
    }

    func testARelayedErrorPageStreamsWhole() throws {
        // A large 404 body passes as it came (before, an error answer was held whole in memory).
        let upstream = try startPythonServer("""
        import http.server
        class Big(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_GET(self):
                body = b"x" * (3 << 20)
                self.send_response(404); self.send_header("Content-Length", str(len(body))); self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args): pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Big)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """)
        let proxy = try startProxy()
        let answer = try run(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", "-x", proxy.url, "http://127.0.0.1:\(upstream)/missing"])
        XCTAssertEqual(answer.stdout, "404 \(3 << 20)")
    }
}
