import Foundation
import FaultServer
import RequestArchive
import RequestEventFormat
import RequestMonitor
import RequestOperations
import Synchronization
import XCTest

/// `--record` and `replay` through the real binary.
final class RecordingTests: XCTestCase {
    func temporaryPath(_ name: String) -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString)-\(name)").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    func testARecordingHoldsWhatTheLiveRunPrintedAndReplaysToTheSameOutcomes() throws {
        let recording = temporaryPath("demo.jsonl")
        let live = try reqtop(["demo", "--scenario", "quick", "--no-tui", "--record", recording])
        XCTAssertEqual(live.status, 1, live.stderr)
        XCTAssert(live.stderr.contains("recorded to \(recording) (secrets redacted)"), live.stderr)
        let recorded = try String(contentsOfFile: recording, encoding: .utf8)
        XCTAssertEqual(Array(recorded.split(separator: "\n").dropFirst()), Array(live.stdout.split(separator: "\n").dropFirst()),
                       "the recording holds the same events as the live output")

        let replay = try reqtop(["replay", recording])
        XCTAssertEqual(replay.status, live.status)
        XCTAssertEqual(Array(replay.stdout.split(separator: "\n").dropFirst()), Array(recorded.split(separator: "\n").dropFirst()))
        XCTAssert(replay.stderr.contains("replayed 6 operations"), replay.stderr)
        XCTAssert(replay.stderr.contains("3 succeeded, 2 failed, 1 cancelled"), replay.stderr)
    }

    /// Runs the demo headless, recording to `recording`, and kills it with SIGKILL at 3 s.
    private func recordDemoAndKillItAfterThreeSeconds(to recording: String) throws {
        let process = Process()
        process.executableURL = CommandLineTests.binary
        process.arguments = ["demo", "--no-tui", "--record", recording]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        Thread.sleep(forTimeInterval: 3)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func testARecordingKilledWithSIGKILLReadsUpToItsLastCompleteLine() throws {
        let recording = temporaryPath("killed.jsonl")
        try recordDemoAndKillItAfterThreeSeconds(to: recording)

        let text = try String(contentsOfFile: recording, encoding: .utf8)
        XCTAssertGreaterThan(text.split(separator: "\n").count, 20, "events were written as they happened")
        let replay = try reqtop(["replay", recording])
        XCTAssertEqual(replay.status, 1, "operations were still running when it was killed: \(replay.stderr)")
        XCTAssert(replay.stderr.contains("unfinished when the recording ends"), replay.stderr)
    }

    /// Before: a HAR was written at the end, so SIGKILL left an empty file.
    func testAHARRecordingKilledWithSIGKILLHoldsEveryFinishedOperation() throws {
        let recording = temporaryPath("killed.har")
        try recordDemoAndKillItAfterThreeSeconds(to: recording)

        // As it was left: a valid HAR with what had finished.
        let whole = try reqtop(["replay", recording, "--no-tui"])
        XCTAssert(whole.stderr.contains("reqtop: replayed "), whole.stderr)
        let operations = Set(whole.events.compactMap { $0["op"] as? String })
        XCTAssertGreaterThanOrEqual(operations.count, 3, "w1-profile, w1-redirects, w1-not-found finish in the first 3 s: \(operations)")
        // Before: "N succeeded", exit 0, as if the run were complete.
        XCTAssertEqual(whole.status, 1, "a recording cut off by SIGKILL is not a complete run")
        XCTAssert(whole.stderr.contains("the recording did not end cleanly"), whole.stderr)
        XCTAssertEqual(try HARImport.read(path: recording).endedCleanly, false)
        // And with its last entry torn, as a kill in the middle of a write leaves it.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: recording))
        let entries = bytes.split(separator: UInt8(ascii: "\n")).count - 2  // a header line, one line an entry, a closing line
        bytes.removeLast(40)
        try bytes.write(to: URL(fileURLWithPath: recording))
        let torn = try reqtop(["replay", recording, "--no-tui"])
        XCTAssert(torn.stderr.contains("the recording was cut off; replaying the \(entries - 1) whole entries before the cut"), torn.stderr)
        XCTAssertEqual(torn.status, 1)
    }

    func testRecordExportImportGivesTheSameOperationsAttemptsAndOutcomes() throws {
        let recording = temporaryPath("demo.jsonl"), exported = temporaryPath("demo.har"), direct = temporaryPath("direct.har")
        XCTAssertEqual(try reqtop(["demo", "--scenario", "quick", "--no-tui", "--record", recording]).status, 1)
        let export = try reqtop(["export", recording, "--har", exported])
        XCTAssertEqual(export.status, 0, export.stderr)
        XCTAssertEqual(export.stderr, "reqtop: wrote \(exported): 6 operations\n")

        let fromLog = try reqtop(["replay", recording])
        let fromHAR = try reqtop(["replay", exported])
        XCTAssertEqual(fromHAR.status, fromLog.status)
        // Every recorded event, in time order. Events of two operations at the same
        // microsecond may come back in either order: a HAR keeps each operation's events in
        // its own entry (a full run once had two at t 0.017116 swap).
        func timeOrdered(_ output: String) -> [Substring] {
            // Each run of lines with the same `t` sorted within itself; the runs in order.
            var result: [Substring] = [], run: [Substring] = []
            for line in output.split(separator: "\n").dropFirst() {
                if let last = run.last, last.split(separator: ",").first != line.split(separator: ",").first {
                    result += run.sorted()
                    run = []
                }
                run.append(line)
            }
            return result + run.sorted()
        }
        XCTAssertEqual(timeOrdered(fromHAR.stdout), timeOrdered(fromLog.stdout), "the HAR gives back every recorded event")
        XCTAssertEqual(fromHAR.stderr, fromLog.stderr)

        let recordedAsHAR = try reqtop(["demo", "--scenario", "quick", "--no-tui", "--record", direct])
        XCTAssert(recordedAsHAR.stderr.contains("recorded to \(direct)"), recordedAsHAR.stderr)
        let replayed = try reqtop(["replay", direct])
        XCTAssert(replayed.stderr.contains("replayed 6 operations"), replayed.stderr)
        XCTAssert(replayed.stderr.contains("3 succeeded, 2 failed, 1 cancelled"), replayed.stderr)
        XCTAssertFalse(replayed.stderr.contains("did not end cleanly"), replayed.stderr)
        XCTAssertEqual(try HARImport.read(path: direct).endedCleanly, true, "a clean end is marked")
        // The marked end is still HAR to a reader someone else wrote.
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", "import json,sys; d=json.load(open(sys.argv[1])); assert d['log']['_reqtop']['complete'] is True; print(len(d['log']['entries']))", direct]
        let out = Pipe()
        python.standardOutput = out
        try python.run()
        python.waitUntilExit()
        XCTAssertEqual(python.terminationStatus, 0)
        XCTAssertEqual(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines),
                       "\(try HARImport.read(path: direct).entryCount)", "an entry an attempt")
    }

    /// Answers' bodies ride from the live run to the recording, to HAR (`content.text`, or
    /// base64 with `encoding`, as Python's json reads them) and back, byte for byte.
    func testBodiesSurviveRecordingHARExportAndImport() throws {
        let plan = temporaryPath("bodies.json"), recording = temporaryPath("bodies.jsonl"), har = temporaryPath("bodies.har")
        try """
        {"retry": {"maxAttempts": 1}, "requests": [
          {"id": "text", "url": "{{fault}}/echo?q=1"},
          {"id": "binary", "url": "{{fault}}/bytes/300?seed=9"}
        ]}
        """.write(toFile: plan, atomically: true, encoding: .utf8)
        let run = try reqtop(["run", plan, "--no-tui", "--record", recording])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(try reqtop(["export", recording, "--har", har]).status, 0)
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", """
            import json, sys, base64
            entries = {e['_reqtop']['op']: e['response']['content'] for e in json.load(open(sys.argv[1]))['log']['entries']}
            assert json.loads(entries['text']['text'])['query'] == {'q': '1'}, entries['text']
            assert entries['binary']['encoding'] == 'base64' and len(base64.b64decode(entries['binary']['text'])) == 300
            print('ok')
            """, har]
        let out = Pipe()
        python.standardOutput = out
        try python.run()
        python.waitUntilExit()
        XCTAssertEqual(python.terminationStatus, 0)
        XCTAssertEqual(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self), "ok\n")
        func bodies(_ path: String) throws -> [String] {
            try reqtop(["replay", path]).stdout.split(separator: "\n").filter { $0.contains(#""event":"responseBody""#) }
                .map { String($0.drop { $0 != "," }) }
        }
        let fromLog = try bodies(recording)
        XCTAssertEqual(fromLog.count, 2)
        XCTAssertEqual(try bodies(har), fromLog, "the HAR gives the bodies back as recorded")
    }

    func testResendingARecordingToATargetNeverSendsARedactedValue() throws {
        let plan = temporaryPath("plan.json"), recording = temporaryPath("secret.jsonl")
        try """
        {"retry": {"baseDelay": 0.05}, "requests": [
          {"id": "public", "url": "{{fault}}/echo?page=2"},
          {"id": "flaky", "url": "{{fault}}/flaky/resend?failures=1"},
          {"id": "private", "url": "{{fault}}/echo", "headers": {"Authorization": "Bearer s3cret"}},
          {"id": "tokened", "url": "{{fault}}/echo?token=s3cret"}
        ]}
        """.write(toFile: plan, atomically: true, encoding: .utf8)
        XCTAssertEqual(try reqtop(["run", plan, "--record", recording]).status, 0)
        XCTAssertFalse(try String(contentsOfFile: recording, encoding: .utf8).contains("s3cret"))

        let target = try FaultServer.start()
        defer { target.stop() }
        let resent = try reqtop(["replay", recording, "--send", "--target", target.baseURL.absoluteString])
        XCTAssertEqual(resent.status, 1, "two requests could not be sent: \(resent.stderr)")
        XCTAssert(resent.stderr.contains("not sending private: its Authorization value was redacted"), resent.stderr)
        XCTAssert(resent.stderr.contains("not sending tokened: its query value token was redacted"), resent.stderr)
        XCTAssert(resent.stderr.contains("2 succeeded, 0 failed, 0 cancelled"), resent.stderr)
        XCTAssertEqual(target.counters.hits("/echo"), 1, "only the public request reached the target")
        XCTAssertEqual(target.counters.hits("/flaky/resend"), 2, "the engine retried it as it would live")
        let finished = resent.events.filter { $0["event"] as? String == "finished" }.compactMap { $0["op"] as? String }
        XCTAssertEqual(Set(finished), ["public", "flaky"])
    }

    /// Before: a re-sent POST had no body, and timeouts and retry settings were dropped
    /// without a word. Now bodies (up to 64 KiB, secret fields redacted) and options are
    /// recorded and sent again as they were; what cannot be sent whole is named and not sent.
    func testResendingSendsBodiesAndOptionsAsRecorded() throws {
        let plan = temporaryPath("plan.json"), recording = temporaryPath("bodies.jsonl")
        let big = String(repeating: "x", count: 70_000)
        try """
        {"retry": {"baseDelay": 0.05, "jitter": "none"}, "requests": [
          {"id": "upload", "method": "POST", "url": "{{fault}}/echo?what=upload", "headers": {"Idempotency-Key": "k1"},
           "body": {"name": "x", "n": [1, 2]}},
          {"id": "form", "method": "POST", "url": "{{fault}}/echo?what=form",
           "headers": {"Content-Type": "application/x-www-form-urlencoded"}, "body": "a=1&b=two"},
          {"id": "login", "method": "POST", "url": "{{fault}}/echo?what=login", "body": {"username": "ann", "password": "s3cret"}},
          {"id": "huge", "method": "PUT", "url": "{{fault}}/echo?what=huge", "body": "\(big)"},
          {"id": "child", "url": "{{fault}}/echo?what=child&m={{upload.method}}", "dependsOn": "upload"},
          {"id": "stubborn", "url": "{{fault}}/flaky/stubborn?failures=3", "retry": {"maxAttempts": 4}},
          {"id": "slow", "url": "{{fault}}/delay/1500", "timeout": 0.3, "retry": {"maxAttempts": 1}}
        ]}
        """.write(toFile: plan, atomically: true, encoding: .utf8)
        let live = try reqtop(["run", plan, "--record", recording])
        XCTAssertEqual(live.status, 1, "slow times out: \(live.stderr)")
        let recorded = try String(contentsOfFile: recording, encoding: .utf8)
        XCTAssertFalse(recorded.contains("s3cret"))
        XCTAssert(recorded.contains(#""body":"{\"username\":\"ann\",\"password\":\"[redacted]\"}""#) ||
                  recorded.contains(#"\"password\":\"[redacted]\""#), "the password field is redacted in the recorded body")
        XCTAssert(recorded.contains(#""bodyBytes":70000,"bodyOmitted":"over the 65536-byte limit""#), "the huge body is named, not carried")
        XCTAssert(recorded.contains(#""event":"built""#), "child's built request is recorded")

        let target = try FaultServer.start()
        defer { target.stop() }
        let resent = try reqtop(["replay", recording, "--send", "--target", target.baseURL.absoluteString])
        XCTAssertEqual(resent.status, 1, resent.stderr)
        XCTAssert(resent.stderr.contains("not sending login: its body field password was redacted"), resent.stderr)
        XCTAssert(resent.stderr.contains("not sending huge: its body (70000 bytes) was not recorded: over the 65536-byte limit"), resent.stderr)
        let echoes = Dictionary(target.counters.requests("/echo").map { (URLComponents(string: $0.uri)?.queryItems?.first?.value ?? "", $0) },
                                uniquingKeysWith: { first, _ in first })
        XCTAssertEqual(Set(echoes.keys), ["upload", "form", "child"], "login and huge never reached the target")
        XCTAssertEqual(echoes["upload"]?.method, "POST")
        XCTAssertEqual(echoes["upload"].map { String(decoding: $0.body, as: UTF8.self) }, #"{"n":[1,2],"name":"x"}"#, "the plan's JSON as sent live")
        XCTAssert(recorded.contains(#""bodyBytes":22,"body":"{\"n\":[1,2],\"name\":\"x\"}""#))
        XCTAssertEqual(echoes["upload"]?.headers["idempotency-key"], "k1")
        XCTAssertEqual(echoes["form"].map { String(decoding: $0.body, as: UTF8.self) }, "a=1&b=two")
        XCTAssertEqual(echoes["form"]?.headers["content-type"], "application/x-www-form-urlencoded")
        XCTAssertEqual(echoes["child"]?.uri, "/echo?what=child&m=POST", "the request as built from its parent, not the template")
        XCTAssertEqual(target.counters.hits("/flaky/stubborn"), 4, "its own 4 attempts, not the default 3")
        let finished = Dictionary(resent.events.filter { $0["event"] as? String == "finished" }.map { ($0["op"] as? String ?? "", $0) },
                                  uniquingKeysWith: { first, _ in first })
        XCTAssertEqual(finished["stubborn"]?["outcome"] as? String, "success")
        XCTAssertEqual(finished["slow"]?["outcome"] as? String, "failure", "its 0.3 s timeout came along")
        XCTAssertEqual(finished["slow"]?["attempts"] as? Int, 1)
        XCTAssertLessThan(finished["slow"]?["duration"] as? Double ?? 99, 1.4, "it gave up at its timeout, before the server answered")
    }

    func testResendingWithoutATargetAsksFirst() throws {
        let recording = temporaryPath("demo.jsonl")
        _ = try reqtop(["demo", "--scenario", "quick", "--no-tui", "--record", recording])
        let refused = try reqtop(["replay", recording, "--send"])
        XCTAssertEqual(refused.status, 2)
        XCTAssert(refused.stderr.contains("would go to: 127.0.0.1:"), refused.stderr)
        XCTAssert(refused.stderr.contains("not sending without a confirmation: pass --yes, or --target URL"), refused.stderr)
        XCTAssertEqual(try reqtop(["replay", recording, "--target", "http://127.0.0.1:1"]).status, 2, "--target goes with --send")
        XCTAssertEqual(try reqtop(["replay", recording, "--send", "--target", "ftp://x"]).status, 2)
    }

    func testReplayErrors() throws {
        let broken = temporaryPath("broken.jsonl")
        try #"{"event":"session","version":1}"#.appending("\nnot json\n{\"t\":1}\n").write(toFile: broken, atomically: true, encoding: .utf8)
        let run = try reqtop(["replay", broken])
        XCTAssertEqual(run.status, 2)
        XCTAssertEqual(run.stderr, "reqtop: \(broken): line 2: not a JSON object\n")
        XCTAssertEqual(try reqtop(["replay", "/no/such.jsonl"]).status, 2)
        let notHAR = temporaryPath("not.har")
        try #"{"log": {"entries": [{"startedDateTime": 5}]}}"#.write(toFile: notHAR, atomically: true, encoding: .utf8)
        let har = try reqtop(["replay", notHAR])
        XCTAssertEqual(har.status, 2)
        XCTAssertEqual(har.stderr, "reqtop: \(notHAR): $.log.entries[0].startedDateTime: expected an ISO 8601 date, found a number\n")
        XCTAssertEqual(try reqtop(["demo", "--record", "/no/such/dir/x.jsonl"]).status, 2)
    }
}

/// The end of a replay shows what the live run showed at its end.
final class ReplayEquivalenceTests: XCTestCase {
    func testTheLastScreenOfAReplayIsTheLastScreenOfTheLiveRun() throws {
        let recording = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: recording) }
        let live = try reqtop(["demo", "--scenario", "quick", "--no-tui", "--record", recording])

        // What the live run printed, event by event, through the monitor's model...
        var liveModel = QueueModel(source: "run")
        for (index, line) in live.stdout.split(separator: "\n").enumerated() {
            if let event = try EventLog.parse(line: String(line), lineNumber: index + 1) { liveModel.apply(event) }
        }
        // ...and the recording played to its end by the replay player.
        let log = try EventLogFile.read(path: recording)
        let replayed = Mutex(QueueModel(source: "run"))
        let player = ReplayPlayer(events: log.events) { output in
            if case .events(let events) = output { replayed.withLock { $0.apply(events) } }
        }
        player.jumpToEnd()
        let replayModel = replayed.withLock { $0 }

        func screen(_ model: QueueModel) -> String {
            let visible = VisibleRows.compute(model, filter: "", sort: .arrival, now: model.latest)
            return MonitorView(model: model, state: MonitorState(), visible: visible, theme: Theme(), now: model.latest)
                .render(width: 140, height: 30).text
        }
        XCTAssertEqual(liveModel.rows.count, 6)
        XCTAssertEqual(screen(replayModel), screen(liveModel))
        XCTAssertEqual(replayModel.rows.map(\.state), liveModel.rows.map(\.state))
        XCTAssertEqual(replayModel.rows.map(\.attempt), liveModel.rows.map(\.attempt))
        XCTAssertEqual(replayModel.rows.map(\.status), liveModel.rows.map(\.status))
    }
}

extension RecordingTests {
    /// Before: a 401 that copied the request's Authorization into WWW-Authenticate and
    /// X-Echo-Auth put `Bearer SEKRET` on stdout and in the recording, on both transports.
    func testASecretTheServerEchoesBackIsRedactedOnStdoutAndInRecordings() throws {
        for transport in ["urlsession", "nio"] {
            let plan = temporaryPath("echo-\(transport).json")
            try """
            {"retry": {"maxAttempts": 1}, "requests": [
              {"id": "echoed", "url": "{{fault}}/echo-auth", "headers": {"Authorization": "Bearer SEKRET-\(transport)"}}
            ]}
            """.write(toFile: plan, atomically: true, encoding: .utf8)
            for recording in [temporaryPath("echo-\(transport).jsonl"), temporaryPath("echo-\(transport).har")] {
                let run = try reqtop(["run", plan, "--transport", transport, "--record", recording])
                XCTAssertEqual(run.status, 1, "the 401 fails: \(run.stderr)")
                XCTAssert(run.stdout.contains("X-Echo-Auth"), "the echo is there, redacted: \(run.stdout)")
                XCTAssertFalse(run.stdout.contains("SEKRET"), run.stdout)
                XCTAssertFalse(run.stderr.contains("SEKRET"), run.stderr)
                XCTAssertFalse(try String(contentsOfFile: recording, encoding: .utf8).contains("SEKRET"), recording)
            }
        }
    }
}
