import FaultServer
import Foundation
import XCTest

/// `reqtop proxy` in a real terminal, with curl as the client (#44): a breakpoint holds curl's
/// request and `a` answers it (curl prints the mock); `!` on the host makes curl see the
/// injected 503; cancelling a request in flight gives curl a 502 that says so, and cancelling a
/// tunnel closes it.
final class ProxyEndToEndTests: TerminalTestCase {
    private static func curl(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-i", "--max-time", "30"] + arguments
        var environment = ProcessInfo.processInfo.environment
        for name in ["http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "no_proxy"] { environment[name] = nil }
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// Runs `curl` on a thread of its own: the request is held while the test types.
    private func curlInBackground(_ arguments: [String]) -> () -> String {
        inBackground { (try? Self.curl(arguments)) ?? "<curl failed>" }
    }

    /// Starts `reqtop proxy ARGUMENTS` with its monitor in this test's terminal (its exit
    /// status echoed as `exit-status-N` when it ends), its files in `folder`; its address.
    private func openProxyMonitor(folder: String, arguments: String) throws -> String {
        let port = try ProxyTests.freePort()
        let proxy = "http://127.0.0.1:\(port)"
        try openShell(width: 170, height: 40)
        try keys("XDG_CONFIG_HOME=\(folder) \(CommandLineTests.binary.path) proxy --port \(port) \(arguments); echo \"exit\"\"-status-$?\"", "Enter")
        try waitForScreen("the proxy's monitor") { $0.contains("proxy \(proxy)") }
        return proxy
    }

    func testBreakpointAnswerFaultAndCancelReachCurl() throws {
        let upstream = try FaultServer.start()
        defer { upstream.stop() }
        let proxy = try openProxyMonitor(folder: try makeTemporaryFolder("proxy-tmux"), arguments: "--tunnel 127.0.0.1")
        let base = upstream.baseURL.absoluteString

        // A request seen.
        XCTAssertTrue(try Self.curl(["-x", proxy, base + "/status/200"]).hasSuffix("status 200\n"))
        try waitForScreen("the first request") { $0.contains("c1-r1") && $0.contains("/status/200") }

        // A breakpoint holds curl's request; `a` answers it, and curl prints the answer.
        try keys("B")
        try waitForScreen("the breakpoint prompt") { $0.contains("break before sending:") }
        try keys("C-u")
        try tmux(["send-keys", "-t", session, "-l", "path:/echo"])
        try keys("Enter")
        try waitForScreen("the breakpoint set") { $0.contains("stops path:/echo before sending") }
        let held = curlInBackground(["-x", proxy, base + "/echo"])
        try waitForScreen("curl's request held") { $0.split(separator: "\n").contains { $0.contains("c2-r1") && $0.contains("break") } }
        try keys("G", "a")
        try waitForScreen("the answer prompt") { $0.contains("answer c2-r1 with") }
        try keys("C-u")
        try tmux(["send-keys", "-t", session, "-l", #"200 {"mocked":true}"#])
        try keys("Enter")
        let mocked = held()
        XCTAssertTrue(mocked.hasPrefix("HTTP/1.1 200"), mocked)
        XCTAssertTrue(mocked.contains("X-Reqtop-Injected: true"), mocked)
        XCTAssertTrue(mocked.hasSuffix(#"{"mocked":true}"#), mocked)
        try keys("B")
        try keys("C-u", "Enter")

        // `!` on the host in the Hosts view: curl sees the injected 503, marked.
        try keys("H")
        try waitForScreen("the Hosts view") { $0.contains("BREAKER") }
        try keys("g", "!")
        try waitForScreen("faults on") { $0.contains("FAULTS ON") }
        let injected = try Self.curl(["-x", proxy, base + "/status/200"])
        XCTAssertTrue(injected.hasPrefix("HTTP/1.1 503"), injected)
        XCTAssertTrue(injected.contains("X-Reqtop-Injected: true"), injected)
        try keys("Z", "Escape")
        try waitForScreen("faults off") { !$0.contains("FAULTS ON") }

        // Cancel a request in flight: curl gets a 502 that says who cancelled it.
        let slow = curlInBackground(["-x", proxy, base + "/delay/20000"])
        try waitForScreen("the slow request running") { $0.split(separator: "\n").contains { $0.contains("/delay/20000") && $0.contains("running") } }
        try keys("G", "X")
        try waitForScreen("the cancel question") { $0.contains("Cancel c") }
        try keys("y")
        let cancelled = slow()
        XCTAssertTrue(cancelled.hasPrefix("HTTP/1.1 502"), cancelled)
        XCTAssertTrue(cancelled.contains("cancelled by monitor"), cancelled)

        // Cancel a tunnel (curl -p: CONNECT, passed through): both sides close, and the row
        // says it was cancelled.
        let tunnelled = curlInBackground(["-p", "-x", proxy, base + "/delay/20000"])
        try waitForScreen("the tunnel running") { $0.split(separator: "\n").contains { $0.contains("CONNECT") && $0.contains("running") } }
        let asked = Date()
        try keys("G", "X")
        try waitForScreen("the cancel question") { $0.contains("Cancel c") }
        try keys("y")
        let cut = tunnelled()
        XCTAssertFalse(cut.contains("status 200"), cut)
        XCTAssertLessThan(Date().timeIntervalSince(asked), 15, "the tunnel closed when cancelled, not when the 20 s delay ended")
        try waitForScreen("the tunnel's row cancelled") { $0.split(separator: "\n").contains { $0.contains("CONNECT") && $0.contains("cancelled") } }

        try keys("q")
        try waitForScreen("the exit") { $0.contains("exit-status-0") }
    }

    /// `q` in the proxy's monitor stops it as a signal stops it headless: what is in flight
    /// may end (an answer streaming to its client reaches it whole, and is recorded as it was),
    /// and what hangs is cancelled after the grace, its client told.
    func testQuittingTheMonitorLetsAnswersInFlightEnd() throws {
        let upstream = try FaultServer.start()
        defer { upstream.stop() }
        let folder = try makeTemporaryFolder("proxy-quit")
        let recording = folder + "/quit.jsonl"
        let proxy = try openProxyMonitor(folder: folder, arguments: "--record \(recording)")
        let base = upstream.baseURL.absoluteString
        // 60,000 bytes in 6 pieces over 1.2 s, and a request the upstream never answers.
        let dripping = curlInBackground(["-x", proxy, "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                                         base + "/drip?bytes=60000&duration=1200&chunks=6"])
        let hanging = curlInBackground(["-x", proxy, "-o", "/dev/null", "-w", "%{http_code}", base + "/hang"])
        try waitForScreen("both requests running") { screen in
            screen.split(separator: "\n").contains { $0.contains("/drip") && $0.contains("running") }
                && screen.split(separator: "\n").contains { $0.contains("/hang") && $0.contains("running") }
        }
        let quit = Date()
        try keys("q")
        XCTAssertEqual(dripping(), "200 60000", "the answer in flight reached its client whole")
        XCTAssertEqual(hanging(), "502", "what hangs past the grace is cancelled, and its client told")
        try waitForScreen("the exit") { $0.contains("exit-status-0") }
        XCTAssertLessThan(Date().timeIntervalSince(quit), 10, "the grace is short")
        try waitForScreen("what the stop said") { $0.contains("stopping: 2 requests in flight may end within 2s; Ctrl-C cancels them now") }
        let recorded = try String(contentsOfFile: recording, encoding: .utf8)
        let outcomes = recorded.split(separator: "\n").compactMap { line -> String? in
            guard line.contains("\"event\":\"finished\"") else { return nil }
            return line.contains("\"outcome\":\"success\",\"status\":200") ? "success" : line.contains("\"outcome\":\"cancelled\"") ? "cancelled" : "other"
        }
        XCTAssertEqual(outcomes.sorted(), ["cancelled", "success"], recorded)
    }
}
