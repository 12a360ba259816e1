import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest

/// `reqtop whatif` and `reqtop serve --from` (#34): a recorded run re-run with its own settings
/// ends the same; with other settings it says what changed; the recording served answers as
/// its upstream did; bad input gets the plan's messages and exit 2.
final class WhatIfTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = try makeTemporaryFolder("whatif")
    }

    /// A port nothing listens on: a dead upstream.
    private func deadPort() throws -> Int {
        let server = try FaultServer.start()
        let port = server.port
        server.stop()
        return port
    }

    /// Records a run with a flaky route, a healthy one and a dead host.
    private func record() throws -> String {
        let plan = folder + "/plan.json", recording = folder + "/rec.jsonl"
        let key = UUID().uuidString.prefix(8)
        try #"""
            {"retry": {"maxAttempts": 4, "baseDelay": 0.05, "jitter": "none"}, "requests": [
              {"id": "flaky", "url": "{{fault}}/flaky/\#(key)?failures=2&status=503"},
              {"id": "ok", "url": "{{fault}}/echo"},
              {"id": "dead", "url": "http://127.0.0.1:\#(try deadPort())/x", "retry": {"maxAttempts": 3, "baseDelay": 0.05, "jitter": "none"}}]}
            """#.write(toFile: plan, atomically: true, encoding: .utf8)
        let run = try reqtop(["run", plan, "--no-tui", "--record", recording])
        XCTAssertEqual(run.status, 1, "dead fails: \(run.stderr)")
        return recording
    }

    func testARecordingReRunWithItsOwnSettingsEndsTheSameAndOtherSettingsSayWhatChanged() throws {
        let recording = try record()
        let header = try String(contentsOfFile: recording, encoding: .utf8).split(separator: "\n")[0]
        XCTAssert(header.contains(#""settings":{"circuitBreaker":{"#), "the header carries the queue's settings: \(header)")

        let same = try reqtop(["whatif", recording])
        XCTAssertEqual(same.status, 0, same.stderr)
        XCTAssert(same.stdout.hasPrefix("no differences between rec.jsonl and rec.whatif.jsonl\n"), same.stdout)
        XCTAssert(same.stdout.contains(", 0 unexplained differences (rec.jsonl → rec.whatif.jsonl)\n"), same.stdout)
        XCTAssert(same.stderr.contains("re-running \(recording)") && same.stderr.contains("recorded answers"), same.stderr)

        let fewer = try reqtop(["whatif", recording, "--set", "retry.maxAttempts=1", "--record", folder + "/one.jsonl"])
        XCTAssertEqual(fewer.status, 1, "the runs ended differently, as diff says with 1: \(fewer.stderr)")
        XCTAssert(fewer.stdout.contains("  flaky: unexplained\n    rec.jsonl: success 200 · 3 attempts"), fewer.stdout)
        XCTAssert(fewer.stdout.contains("one.jsonl: failure 503 · 1 attempt"), fewer.stdout)
        XCTAssert(fewer.stdout.contains("  dead: unexplained\n    rec.jsonl: failure - · 3 attempts"), "the dead host refused again: \(fewer.stdout)")
        XCTAssert(fewer.stdout.contains("summary: attempts sent upstream 7 → 3"), fewer.stdout)

        let json = try reqtop(["whatif", recording, "--json", "--record", folder + "/again.jsonl"])
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], json.stdout)
        XCTAssertEqual(object["same"] as? Bool, true, "\(object)")
    }

    /// "What if there were no breaker?": against a dead host, the breaker had stopped the
    /// attempts after two refusals; without it the re-run sends measurably more.
    func testWithTheBreakerOffTheDeadHostGetsMoreAttempts() throws {
        let plan = folder + "/dead.json", recording = folder + "/dead.jsonl"
        let dead = try deadPort()
        let requests = (1...8).map { #"{"id": "d\#($0)", "url": "http://127.0.0.1:\#(dead)/x\#($0)"}"# }.joined(separator: ", ")
        try #"""
            {"retry": {"maxAttempts": 3, "baseDelay": 0.05, "jitter": "none"}, "deadline": 2,
             "circuitBreaker": {"consecutiveFailures": 2, "openFor": 30, "failFast": true}, "requests": [\#(requests)]}
            """#.write(toFile: plan, atomically: true, encoding: .utf8)
        XCTAssertEqual(try reqtop(["run", plan, "--no-tui", "--record", recording]).status, 1)
        let off = try reqtop(["whatif", recording, "--set", "circuitBreaker=false", "--json", "--record", folder + "/off.jsonl"])
        XCTAssertEqual(off.status, 1, "the runs ended differently: \(off.stderr)")
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(off.stdout.utf8)) as? [String: Any], off.stdout)
        let host = try XCTUnwrap((object["hosts"] as? [String: Any])?["127.0.0.1:\(dead)"] as? [String: Any], "\(object)")
        let attempts = try XCTUnwrap(host["attempts"] as? [Int])
        XCTAssertGreaterThan(attempts[1], attempts[0] + 4, "without the breaker: \(attempts[0]) → \(attempts[1]) attempts to the dead host")
    }

    func testBadInputGetsThePlansMessagesAndExit2() throws {
        let recording = try record()
        for (set, message) in [("retry.maxAtempts=6", #"--set: retry.maxAtempts: unknown field (did you mean "maxAttempts"?)"#),
                               ("budget.percent=500", "--set: retryBudgetPerHost.percent: 500.0 is out of range"),
                               ("oops", "--set oops: expected KEY=VALUE")] {
            let bad = try reqtop(["whatif", recording, "--set", set])
            XCTAssertEqual(bad.status, 2, bad.stderr)
            XCTAssert(bad.stderr.contains(message), bad.stderr)
        }
        let empty = folder + "/empty.jsonl"
        try """
            {"event":"session","version":1,"startedAt":"2026-11-25T10:00:00.000Z"}
            {"t":0.1,"op":"a","attempt":1,"event":"queued","method":"GET","url":"http://127.0.0.1:9/x"}

            """.write(toFile: empty, atomically: true, encoding: .utf8)
        let none = try reqtop(["whatif", empty])
        XCTAssertEqual(none.status, 2)
        XCTAssert(none.stderr.contains("no recorded answers to serve"), none.stderr)
        let servedNone = try reqtop(["serve", "--from", empty])
        XCTAssertEqual(servedNone.status, 2)
        XCTAssert(servedNone.stderr.contains("no recorded answers to serve"), servedNone.stderr)
        // The new run never goes over the recording it re-runs.
        let before = try Data(contentsOf: URL(fileURLWithPath: recording))
        let over = try reqtop(["whatif", recording, "--record", recording])
        XCTAssertEqual(over.status, 2)
        XCTAssert(over.stderr.contains("writing it would destroy what is being read"), over.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: recording)), before, "the recording is as it was")
        let missing = try reqtop(["whatif", folder + "/nothing.jsonl"])
        XCTAssertEqual(missing.status, 2)
        XCTAssert(missing.stderr.contains("nothing.jsonl"), missing.stderr)
    }

    func testServeFromAnswersAsTheUpstreamDidInAttemptOrder() throws {
        let recording = try record()
        let served = try AttachTests.launch(["serve", "--from", recording], runtimeDirectory: folder)
        defer { served.process.terminate(); served.process.waitUntilExit() }
        AttachTests.waitFor("the server's URL") { served.stdout().contains("listening on http://") }
        let base = try XCTUnwrap(served.stdout().split(separator: "\n").first?.split(separator: " ").last.map(String.init))
        let flaky = try XCTUnwrap(try String(contentsOfFile: recording, encoding: .utf8).split(separator: "\n")
            .first { $0.contains(#""op":"flaky""#) && $0.contains("taskCreated") }
            .flatMap { line in (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["url"] as? String })
        let target = try XCTUnwrap(URLComponents(string: flaky)).percentEncodedPath + "?" + (URLComponents(string: flaky)?.percentEncodedQuery ?? "")
        var statuses: [Int] = []
        for _ in 0..<4 { statuses.append(try status(base + target)) }
        XCTAssertEqual(statuses, [503, 503, 200, 200], "attempt order, then the last answer")
        XCTAssertEqual(try status(base + "/never-recorded"), 404)
        XCTAssert(served.stderr().contains("serving"), served.stderr())
    }

    private func status(_ url: String) throws -> Int {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var code = -1
        URLSession.shared.dataTask(with: URL(string: url)!) { _, response, _ in
            code = (response as? HTTPURLResponse)?.statusCode ?? -1
            done.signal()
        }.resume()
        done.wait()
        return code
    }
}
