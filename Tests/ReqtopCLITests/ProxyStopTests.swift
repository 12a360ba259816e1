import FaultServer
import Foundation
import XCTest

/// How `reqtop proxy` stops at SIGTERM: it stops listening, lets what is in flight end for a
/// moment (an answer streaming to its client reaches it whole and is recorded as it was), and
/// then cancels what is left (an upstream that never answers); a request sent meanwhile on an
/// open connection is told the proxy is stopping.
final class ProxyStopTests: XCTestCase {
    func testAStopLetsAnswersInFlightEndAndCancelsWhatHangs() throws {
        let upstream = try FaultServer.start()
        defer { upstream.stop() }
        let folder = try makeTemporaryFolder("proxy-stop")
        let recording = folder + "/stopped.jsonl"
        let proxy = try startProxy(["--record", recording, "--ca-dir", folder + "/ca"], unprivileged: false, home: folder)
        let base = upstream.baseURL.absoluteString
        // 60,000 bytes in 6 pieces over 1.2 s, and a request the upstream never answers.
        let dripping = curlInBackground(["-x", proxy.address, "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                                         base + "/drip?bytes=60000&duration=1200&chunks=6"])
        let hanging = curlInBackground(["-x", proxy.address, "-o", "/dev/null", "-w", "%{http_code}", base + "/hang"])
        // Both sent upstream, and the drip's first piece relayed.
        let sent = Date().addingTimeInterval(15)
        // The recording may not be there yet when the proxy first takes a connection: waited
        // for too (a `let` in the loop's condition ended the wait at once, and the stop came
        // before curl connected, on a loaded machine).
        while Date() < sent {
            let text = (try? String(contentsOfFile: recording, encoding: .utf8)) ?? ""
            if text.components(separatedBy: "\"event\":\"sent\"").count >= 3 && text.contains("\"event\":\"data\"") { break }
            usleep(20_000)
        }
        let signalled = Date()
        proxy.signal(SIGTERM)
        // Not listening any more, while what is in flight goes on.
        let closed = Date().addingTimeInterval(5)
        while Date() < closed, Self.accepts(port: proxy.port) { usleep(20_000) }
        XCTAssertFalse(Self.accepts(port: proxy.port), "a stopping proxy takes no new connection")
        XCTAssertEqual(dripping(), "200 60000", "the answer in flight reached its client whole")
        XCTAssertEqual(hanging(), "502", "what hangs past the grace is cancelled, and its client told")
        let ended = proxy.waitForEnd()
        XCTAssertEqual(ended.status, 0, ended.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(signalled), 10, "the grace is short")
        XCTAssertTrue(ended.stderr.contains("stopping: 2 requests in flight may end within 2s; a second Ctrl-C cancels them now"), ended.stderr)
        let finished = ended.events.filter { $0["event"] as? String == "finished" }
        XCTAssertEqual(finished.count, 2, ended.stdout)
        XCTAssertEqual(finished.compactMap { $0["outcome"] as? String }.sorted(), ["cancelled", "success"], ended.stdout)
        XCTAssertTrue(finished.contains { ($0["reason"] as? String)?.contains("cancelled by signal") == true }, ended.stdout)
        let recorded = try String(contentsOfFile: recording, encoding: .utf8)
        XCTAssertTrue(recorded.contains("\"outcome\":\"success\",\"status\":200"), "the recording says what the client got")
    }

    /// A request on a connection the client kept open, sent after the stop began, is answered
    /// 503 by the proxy, not sent upstream.
    func testARequestAfterTheStopIsAnsweredThatTheProxyStops() throws {
        let upstream = try FaultServer.start()
        defer { upstream.stop() }
        let folder = try makeTemporaryFolder("proxy-stop-late")
        let proxy = try startProxy(["--ca-dir", folder + "/ca"], unprivileged: false, home: folder)
        let base = upstream.baseURL.absoluteString
        // One client connection: a slow answer keeps the proxy stopping while the second
        // request comes on the same connection.
        let script = """
        import http.client, os, signal, sys, time
        c = http.client.HTTPConnection("127.0.0.1", \(proxy.port), timeout=20)
        c.request("GET", "\(base)/status/200")
        first = c.getresponse(); first.read()
        s = http.client.HTTPConnection("127.0.0.1", \(proxy.port), timeout=20)
        s.request("GET", "\(base)/delay/1500")
        time.sleep(0.3)
        os.kill(int(sys.argv[1]), signal.SIGTERM)
        time.sleep(0.3)
        c.request("GET", "\(base)/status/200")
        late = c.getresponse()
        print(first.status, late.status, late.getheader("Proxy-Status"), late.read().decode().strip())
        print(s.getresponse().status)
        """
        let run = try runTool("/usr/bin/python3", ["-c", script, String(proxy.pid)], timeout: 60)
        XCTAssertEqual(run.status, 0, run.stderr)
        let lines = run.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2, run.stdout)
        XCTAssertTrue(lines.first?.hasPrefix("200 503 reqtop; error=proxy_internal_response") == true, run.stdout)
        XCTAssertTrue(lines.first?.contains("the proxy is stopping; this request was not sent") == true, run.stdout)
        XCTAssertEqual(lines.last, "200", "the request in flight when the stop began ended with its answer")
        let ended = proxy.waitForEnd()
        XCTAssertEqual(ended.status, 0, ended.stderr)
        let finished = ended.events.filter { $0["event"] as? String == "finished" }
        // The late request was not sent: its row says the proxy refused it (ProxyRefusalRowTests).
        XCTAssertEqual(finished.compactMap { $0["outcome"] as? String }.sorted(), ["failure", "success", "success"], ended.stdout)
        let refused = try XCTUnwrap(finished.first { $0["outcome"] as? String == "failure" }, ended.stdout)
        XCTAssertEqual(refused["status"] as? Int, 503)
        XCTAssertEqual(refused["reason"] as? String, "refused by the proxy: the proxy is stopping; this request was not sent")
        let sent = ended.events.filter { $0["event"] as? String == "sent" }.compactMap { $0["op"] as? String }
        XCTAssertFalse(sent.contains(refused["op"] as? String ?? ""), "the late request was not sent")
    }

    private func curlInBackground(_ arguments: [String]) -> () -> String {
        inBackground { (try? Self.curl(arguments)) ?? "<curl failed>" }
    }
}
