import FaultServer
import Foundation
import RequestOperations
import XCTest

/// The real `reqtop` binary, run as a user would, headless.
final class CommandLineTests: XCTestCase {
    typealias Run = ReqtopRun

    /// The binary sits next to the test bundle in the build folder.
    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("reqtop")
    }

    func writePlan(_ json: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("plan-\(UUID().uuidString).json").path
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    func testRunPrintsJSONLinesAndASummaryAndExitsZeroWhenAllSucceed() throws {
        let plan = try writePlan("""
        {"retry": {"baseDelay": 0.05, "jitter": "none"},
         "requests": [{"id": "a", "url": "{{fault}}/echo"}, {"id": "b", "url": "{{fault}}/flaky/cli-b?failures=1"}]}
        """)
        let run = try reqtop(["run", plan, "--no-tui"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let events = run.events
        XCTAssertEqual(events.first?["event"] as? String, "session")
        XCTAssertEqual(events.first?["version"] as? Int, 1)
        XCTAssertNotNil(events.first?["startedAt"] as? String)
        for event in events.dropFirst() {
            XCTAssertNotNil(event["t"] as? Double)
            XCTAssertNotNil(event["op"] as? String)
            XCTAssertNotNil(event["attempt"] as? Int)
        }
        let finished = events.filter { $0["event"] as? String == "finished" }
        XCTAssertEqual(finished.map { $0["op"] as? String }, ["a", "b"])
        XCTAssertEqual(finished.last?["attempts"] as? Int, 2)
        XCTAssertEqual(run.stderr, "reqtop: 2 operations in " + run.stderr.split(separator: " ")[4] + " 2 succeeded, 0 failed, 0 cancelled (3 attempts)\n")
    }

    func testRunFollowsDependsOnBatchesAndAuthAgainstTheFaultServer() throws {
        let plan = try writePlan("""
        {"auth": {"tokenURL": "{{fault}}/auth/token", "credentials": {"username": "bob", "password": "secret"}},
         "batches": {"pair": {"size": 2, "timeLimit": 5}},
         "requests": [
           {"id": "login", "method": "POST", "url": "{{fault}}/auth/token", "auth": false,
            "body": {"username": "ann", "password": "secret"}},
           {"id": "profile", "url": "{{fault}}/auth/resource/profile", "dependsOn": "login"},
           {"id": "items", "url": "{{fault}}/echo?user={{profile.id}}", "dependsOn": ["profile", "login"], "auth": false,
            "headers": {"X-Login-Token": "{{login.token}}"}, "method": "POST", "body": {"who": "{{profile.user}}"}},
           {"id": "b1", "url": "{{fault}}/auth/resource/b1", "batch": "pair"},
           {"id": "b2", "url": "{{fault}}/auth/resource/b2", "batch": "pair"},
           {"id": "orphan", "url": "{{fault}}/echo", "auth": false, "dependsOn": "broken"},
           {"id": "broken", "url": "{{fault}}/status/404", "auth": false}
         ]}
        """)
        let run = try reqtop(["run", plan, "--no-tui"])
        XCTAssertEqual(run.status, 1, run.stderr)
        // Seven from the plan and the token refresh (the one counting rule: every operation).
        XCTAssert(run.stderr.contains("8 operations in") && run.stderr.contains("6 succeeded, 1 failed, 1 cancelled"), run.stderr)
        let events = run.events
        let items = events.first { $0["op"] as? String == "items" && $0["event"] as? String == "taskCreated" }
        XCTAssertTrue((items?["url"] as? String)?.hasSuffix("/echo?user=42") == true, "\(String(describing: items))")
        XCTAssertEqual(events.filter { $0["op"] as? String == "items" && $0["event"] as? String == "finished" }.first?["outcome"] as? String, "success")
        XCTAssertEqual(events.filter { $0["event"] as? String == "released" && $0["size"] as? Int == 2 }.count, 2)
        let orphan = events.first { $0["op"] as? String == "orphan" && $0["event"] as? String == "finished" }
        XCTAssertEqual(orphan?["reason"] as? String, "parent broken failed")
        XCTAssertEqual(events.filter { ($0["op"] as? String)?.hasPrefix("token-refresh") == true && $0["event"] as? String == "finished" }.count, 1)
    }

    func testABadFlowPlanExitsTwoWithThePlace() throws {
        let plan = try writePlan(#"{"requests": [{"id": "a", "url": "{{fault}}/echo", "dependsOn": "b"}, {"id": "b", "url": "{{fault}}/echo", "dependsOn": "a"}]}"#)
        let run = try reqtop(["run", plan, "--no-tui"])
        XCTAssertEqual(run.status, 2)
        XCTAssert(run.stderr.contains("requests[0].dependsOn: a cycle: a → b → a"), run.stderr)
    }

    func testRunExitsOneWhenARequestFails() throws {
        let plan = try writePlan(#"{"requests": [{"id": "gone", "url": "{{fault}}/status/404"}, {"url": "{{fault}}/echo"}]}"#)
        let run = try reqtop(["run", plan])
        XCTAssertEqual(run.status, 1)
        XCTAssert(run.stderr.contains("1 succeeded, 1 failed, 0 cancelled"), run.stderr)
        XCTAssert(run.stdout.contains(#""reason":"status 404 is not retryable""#))
    }

    func testADeadHostIsAFailureWithItsTransportError() throws {
        let dead = try FaultServer.start()
        let port = dead.port
        dead.stop()
        let plan = try writePlan(#"{"retry": {"maxAttempts": 2, "baseDelay": 0.05}, "requests": [{"url": "http://127.0.0.1:\#(port)/x"}]}"#)
        let run = try reqtop(["run", plan])
        XCTAssertEqual(run.status, 1)
        XCTAssert(run.stdout.contains(#""code":-1004"#), run.stdout)
    }

    func testBadPlansAndBadUsageExitTwoWithAClearMessage() throws {
        let broken = try writePlan(#"{"requests": [{"url": "http://a/", "method": "GET /x"}]}"#)
        let run = try reqtop(["run", broken])
        XCTAssertEqual(run.status, 2)
        XCTAssertEqual(run.stdout, "", "nothing runs on a bad plan")
        XCTAssert(run.stderr.hasPrefix("reqtop: \(broken): requests[0].method: \"GET /x\" is not a method"), run.stderr)

        let notJSON = try writePlan("this is not json")
        XCTAssertEqual(try reqtop(["run", notJSON]).status, 2)
        let missing = try reqtop(["run", "/no/such/plan.json"])
        XCTAssertEqual(missing.status, 2)
        XCTAssertEqual(missing.stderr, "reqtop: /no/such/plan.json: cannot read the file (no such file)\n")

        let flag = try reqtop(["demo", "--frobnicate"])
        XCTAssertEqual(flag.status, 2)
        XCTAssert(flag.stderr.contains("--frobnicate"), flag.stderr)
        let scenario = try reqtop(["demo", "--scenario", "nope"])
        XCTAssertEqual(scenario.status, 2)
        XCTAssert(scenario.stderr.contains("unknown scenario 'nope'"), scenario.stderr)
        XCTAssertEqual(try reqtop(["serve", "--port", "70000"]).status, 2)
        // A negative number is a value, not a flag: the message says what is wrong with it.
        let negative = try reqtop(["demo", "--max-concurrent", "-5"])
        XCTAssertEqual(negative.status, 2)
        XCTAssert(negative.stderr.contains("--max-concurrent must be at least 1"), negative.stderr)
        let port = try reqtop(["serve", "--port", "-1"])
        XCTAssertEqual(port.status, 2)
        XCTAssert(port.stderr.contains("--port must be between 0 and 65535, not -1"), port.stderr)
    }

    func testHelpExitsZero() throws {
        let help = try reqtop(["--help"])
        XCTAssertEqual(help.status, 0)
        XCTAssert(help.stdout.contains("demo"))
        XCTAssert(help.stdout.contains("Exit status"))
        XCTAssertEqual(try reqtop(["help", "run"]).status, 0)
    }

    /// Before: both exited 0, so a script that lost its arguments "succeeded".
    func testNoCommandAndHelpForAnUnknownCommandAreUsageErrors() throws {
        let bare = try reqtop([])
        XCTAssertEqual(bare.status, 2)
        XCTAssert(bare.stderr.hasSuffix("reqtop: no command given; use one of: demo, run, attach, replay, export, serve, diff, whatif, proxy\n"), bare.stderr)
        XCTAssert(bare.stderr.contains("USAGE"), "the help comes with it: \(bare.stderr)")
        let bogus = try reqtop(["help", "bogus"])
        XCTAssertEqual(bogus.status, 2)
        XCTAssertEqual(bogus.stderr, "reqtop: help: no command 'bogus'; the commands are: demo, run, attach, replay, export, serve, diff, whatif, proxy\n")
    }

    func testTheDemoRunsItsWholeFlowHeadless() throws {
        let run = try reqtop(["demo", "--no-tui"], timeout: 90)
        XCTAssertEqual(run.status, 1, "the demo fails some requests on purpose: \(run.stderr)")
        let events = run.events
        let names = Set(events.compactMap { $0["event"] as? String })
        for name in ["queued", "started", "taskCreated", "redirect", "response", "data", "taskCompleted", "validationFailed",
                     "retryScheduled", "earlyRetry", "cancelled", "finished",
                     "intercepted", "held", "released", "reactorStarted", "reactorWaiting", "reactorFinished", "requeued", "retryDenied",
                     "circuitWaiting", "circuitOpened", "circuitHalfOpen", "circuitClosed"] {
            XCTAssert(names.contains(name), "the demo never published \(name)")
        }
        let triggers = Set(events.filter { $0["event"] as? String == "earlyRetry" }.compactMap { $0["trigger"] as? String })
        XCTAssert(triggers.contains("probe"), "\(triggers)")
        XCTAssert(triggers.contains { $0.hasPrefix("host-success:") }, "\(triggers)")
        let outcomes = Dictionary(events.filter { $0["event"] as? String == "finished" }.map { ($0["op"] as! String, $0["outcome"] as! String) },
                                  uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(outcomes["w1-hanging"], "cancelled")
        XCTAssertEqual(outcomes["w1-exhausted"], "failure")
        let denied = events.filter { $0["event"] as? String == "retryDenied" }
        XCTAssert(denied.allSatisfy { ($0["op"] as? String)?.hasPrefix("w1-burst-") == true }, "only the burst meets the budget: \(denied)")
        XCTAssert(denied.contains { ($0["reason"] as? String)?.contains("exhausted: 20 % of requests in 10s, plus 0.5 a second") == true }, "\(denied)")
        // The outage: the stock host's breaker opens, holds the requests, closes after a
        // successful probe, and every stock request succeeds.
        let circuit = events.filter { ($0["op"] as? String) == "" }.compactMap { $0["event"] as? String }.filter { $0.hasPrefix("circuit") }
        XCTAssertEqual(circuit.first, "circuitOpened", "\(circuit)")
        XCTAssertEqual(circuit.last, "circuitClosed", "\(circuit)")
        XCTAssertEqual((1...20).filter { outcomes["w1-stock-\($0)"] == "success" }.count, 20, "\(outcomes.filter { $0.key.contains("stock") })")
        XCTAssertEqual(outcomes["w1-reconnect"], "success")
        XCTAssertEqual(outcomes["w1-flaky"], "success")
        XCTAssertEqual(outcomes["w1-post"], "failure")
        XCTAssertEqual(outcomes["w1-post-idempotent"], "success")
        // The flow-control tour: a chain, a batch, one refresh for a burst of 401s.
        XCTAssertEqual(outcomes["w1-orders"], "success")
        XCTAssertEqual(outcomes["w1-legacy-report"], "cancelled")
        XCTAssertEqual(events.filter { $0["event"] as? String == "reactorStarted" }.count, 1)
        XCTAssertEqual(events.filter { $0["event"] as? String == "requeued" }.count, 6)
        for index in 1...6 { XCTAssertEqual(outcomes["w1-feed-\(index)"], "success") }
        XCTAssertEqual(outcomes["w1-notifications"], "success")
        XCTAssertEqual(Set(events.filter { $0["event"] as? String == "released" }.compactMap { $0["op"] as? String }), ["w1-upload-1", "w1-upload-2"])
        let duration = (events.last?["t"] as? Double) ?? 0
        XCTAssert((19...60).contains(duration), "one wave of 20 to 60 seconds, got \(duration)")
    }

    func testServePrintsWhereItListensAndStopsOnSIGTERM() throws {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = ["serve"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let line = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
        XCTAssert(line.hasPrefix("reqtop fault server listening on http://127.0.0.1:"), line)
        process.terminate()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
    }
}

/// What a run of the binary printed and how it ended.
struct ReqtopRun {
        var status: Int32
        var stdout: String
        var stderr: String

        var events: [[String: Any]] {
            stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
    }

extension XCTestCase {
    /// Runs the real `reqtop` binary with no terminal, as a script would.
    /// - Parameter unprivileged: as a user who is not root: `nobody` (``UnprivilegedUser``)
    ///   when the tests run as root, as CI does; the tests' own user otherwise.
    /// - Parameter environment: variables set for this run beside the tests' own.
    func reqtop(_ arguments: [String], timeout: TimeInterval = 120, unprivileged: Bool = false,
                environment: [String: String] = [:]) throws -> ReqtopRun {
        if unprivileged, geteuid() == 0 {
            return try runTool("/usr/bin/setpriv", UnprivilegedUser.setprivArguments + [try UnprivilegedUser.binary()] + arguments,
                               timeout: timeout, environment: environment)
        }
        return try runTool(CommandLineTests.binary.path, arguments, timeout: timeout, environment: environment)
    }

    /// Runs a program to its end (stopped past `timeout`), both outputs read while it runs.
    func runTool(_ path: String, _ arguments: [String], timeout: TimeInterval = 120, environment: [String: String] = [:]) throws -> ReqtopRun {
        let process = Process()
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes while the process runs, so a full pipe cannot block it.
        nonisolated(unsafe) var stdout = Data(), stderr = Data()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { stdout = out.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: group) { stderr = err.fileHandleForReading.readDataToEndOfFile() }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            XCTFail("\(path) \(arguments) ran past \(timeout) s")
        }
        process.waitUntilExit()
        group.wait()
        return ReqtopRun(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                   stderr: String(decoding: stderr, as: UTF8.self))
    }

}

extension CommandLineTests {
    /// Before: the live summary counted only what the plan added (5) where a replay of its
    /// own recording counted every operation in it (6, with the token refresh).
    func testALiveRunAndTheReplayOfItsRecordingCountAlike() throws {
        let plan = try writePlan(String(decoding: try Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/fuzz/corpus/plan/readme-flow.json")), as: UTF8.self))
        let recording = plan + ".jsonl"
        let live = try reqtop(["run", plan, "--record", recording])
        let replay = try reqtop(["replay", recording, "--no-tui"])
        func counts(_ stderr: String) -> String? {
            stderr.split(separator: "\n").last.flatMap { line in
                line.range(of: #"[0-9]+ operations"#, options: .regularExpression).map { String(line[$0]) + " " + line.split(separator: ":").dropFirst(2).joined(separator: ":") }
            }
        }
        XCTAssertEqual(counts(live.stderr), "6 operations  6 succeeded, 0 failed, 0 cancelled (6 attempts)", live.stderr)
        XCTAssertEqual(counts(replay.stderr), counts(live.stderr), replay.stderr)
        XCTAssert(live.stdout.contains(#""op":"token-refresh-1""#), "the refresh is one of them")
    }
}

extension CommandLineTests {
    /// Before: stdout (which ends up in CI logs) printed `Authorization: Bearer …` and
    /// `?access_token=…` as they were; only recordings were redacted, and partly.
    func testSecretsNeverLeaveOnStdoutUnlessAskedAndTheHeaderSaysWhich() throws {
        let plan = try writePlan(#"""
        {"requests": [{"id": "s", "url": "http://u:pw-0s3cr3t@127.0.0.1:9/x?access_token=tok-0s3cr3t&page=2",
          "headers": {"Authorization": "Bearer tok-0s3cr3t", "X-Api-Key": "key-0s3cr3t", "X-Trace": "keep-me"},
          "retry": {"maxAttempts": 1}}]}
        """#)
        let redacted = try reqtop(["run", plan])
        XCTAssertFalse(redacted.stdout.contains("0s3cr3t"), redacted.stdout)
        XCTAssert(redacted.stdout.hasPrefix(#"{"event":"session","version":1,"#) && redacted.stdout.split(separator: "\n")[0].contains(#""redacted":true"#), redacted.stdout)
        XCTAssert(redacted.stdout.contains("keep-me") && redacted.stdout.contains("page=2"), "the rest is kept")
        let plain = try reqtop(["run", plan, "--no-redact"])
        XCTAssert(plain.stdout.contains("tok-0s3cr3t") && plain.stdout.contains("key-0s3cr3t"), plain.stdout)
        XCTAssert(plain.stdout.split(separator: "\n")[0].contains(#""redacted":false"#), plain.stdout)
    }
}
