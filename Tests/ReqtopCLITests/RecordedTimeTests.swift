import Foundation
@testable import ReqtopApplication
@testable import ReqtopCLI
import XCTest

/// Times in a recording are input. Before: `whatif` on a HAR with one entry dated 1970 waited
/// out the recorded gap (about 57 years), and `replay` wrote a `t` of about 1.8e9 that
/// `replay` then refused; a recording whose first attempts had no matching answer made
/// `whatif` wait out its deadline without a word.
final class RecordedTimeTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = try makeTemporaryFolder("times")
    }

    func testAnEntryDecadesFromTheRestIsLeftOutAndReplayReadsItsOwnOutput() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("RequestArchiveTests/Fixtures/insomnia.har")
        var har = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: fixture)) as? [String: Any])
        var log = try XCTUnwrap(har["log"] as? [String: Any])
        let entry = try XCTUnwrap((log["entries"] as? [[String: Any]])?.first)
        var old = entry, later = entry
        old["startedDateTime"] = "1970-01-01T00:00:01.000Z"
        later["startedDateTime"] = "2023-03-30T04:39:20.000Z"
        log["entries"] = [entry, old, later]
        har["log"] = log
        let path = folder + "/dated.har"
        try JSONSerialization.data(withJSONObject: har).write(to: URL(fileURLWithPath: path))
        let replay = try reqtop(["replay", path, "--no-tui"])
        XCTAssertEqual(replay.status, 1, "a skipped entry makes the status 1: \(replay.stderr)")
        XCTAssert(replay.stderr.contains("$.log.entries[1].startedDateTime: 1970-01-01T00:00:01.000Z is 53 years from the other entries; left out"), replay.stderr)
        let again = folder + "/again.jsonl"
        try replay.stdout.write(toFile: again, atomically: true, encoding: .utf8)
        let second = try reqtop(["replay", again, "--no-tui"])
        XCTAssertEqual(second.status, 0, "replay reads what replay wrote: \(second.stderr)")
    }

    /// A recording whose header gives no start is replayed with none: the header it prints
    /// does not say it began now (it said the moment of the replay).
    func testAReplayOfARecordingWithNoStartSaysNone() throws {
        let path = folder + "/nostart.jsonl"
        try ([#"{"event":"session","version":1,"redacted":true}"#,
              #"{"t":0.1,"op":"a","attempt":1,"event":"queued","method":"GET","url":"http://example.invalid/","headers":{},"maxAttempts":1}"#,
              #"{"t":0.2,"op":"a","attempt":1,"event":"finished","outcome":"success","status":200,"attempts":1,"duration":0.1}"#]
            .joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let replay = try reqtop(["replay", path, "--no-tui"])
        XCTAssertEqual(replay.status, 0, replay.stderr)
        XCTAssertEqual(replay.stdout.split(separator: "\n").first, #"{"event":"session","version":1,"redacted":true}"#)
        XCTAssertEqual(replay.events.count, 3, replay.stdout)
    }

    func testAWhatIfClosesALongQuietGapAndSaysSo() throws {
        let recording = folder + "/gap.jsonl"
        var lines = [#"{"event":"session","version":1,"startedAt":"2026-11-25T10:00:00.000Z"}"#]
        for (op, at) in [("early", 0.1), ("late", 90_000_000.0)] {
            lines += [
                #"{"t":\#(at),"op":"\#(op)","attempt":1,"event":"queued","method":"GET","url":"http://127.0.0.1:9/\#(op)"}"#,
                #"{"t":\#(at),"op":"\#(op)","attempt":1,"event":"taskCreated","task":1,"url":"http://127.0.0.1:9/\#(op)"}"#,
                #"{"t":\#(at + 0.1),"op":"\#(op)","attempt":1,"event":"response","status":200}"#,
                #"{"t":\#(at + 0.1),"op":"\#(op)","attempt":1,"event":"taskCompleted"}"#,
                #"{"t":\#(at + 0.1),"op":"\#(op)","attempt":1,"event":"finished","outcome":"success","attempts":1,"duration":0.1}"#,
            ]
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: recording, atomically: true, encoding: .utf8)
        // The re-run says so before it waits; it is stopped there (the closed gap is 60 s).
        let run = try AttachTests.launch(["whatif", recording], runtimeDirectory: folder)
        defer { run.process.terminate(); run.process.waitUntilExit() }
        AttachTests.waitFor("the gap's line") { run.stderr().contains("nothing was sent for") }
        XCTAssert(run.stderr().contains("nothing was sent for 3 years from 0.0 s into the recording; the re-run waits 60 s there instead"), run.stderr())
        // Where each moment lands: the late request 60 s after the early one, not 2.9 years.
        let gaps = WhatIfRun.gapsToClose(in: [0.1, 0.2, 90_000_000, 90_000_001], longest: WhatIfRun.longestGap)
        XCTAssertEqual(gaps.count, 1)
        XCTAssertEqual(WhatIfRun.closing(gaps, at: 90_000_000), 60.2, accuracy: 0.001)
        XCTAssertEqual(WhatIfRun.closing(gaps, at: 90_000_001), 61.2, accuracy: 0.001)
        XCTAssertEqual(WhatIfRun.closing(gaps, at: 0.2), 0.2)
        XCTAssertTrue(WhatIfRun.gapsToClose(in: [0, 30, 89], longest: 60).isEmpty, "a minute's quiet is kept as it was")
    }

    func testFirstAttemptsWithNoRecordedAnswerAreNamedAtStart() throws {
        let recording = folder + "/mangled.jsonl"
        // `b`'s answer is filed under attempt 7, which was never sent: its attempt 1 has none.
        try """
        {"event":"session","version":1,"startedAt":"2026-11-25T10:00:00.000Z"}
        {"t":0.1,"op":"a","attempt":1,"event":"queued","method":"GET","url":"http://127.0.0.1:9/a"}
        {"t":0.1,"op":"a","attempt":1,"event":"taskCreated","task":1,"url":"http://127.0.0.1:9/a"}
        {"t":0.2,"op":"a","attempt":1,"event":"response","status":200}
        {"t":0.2,"op":"a","attempt":1,"event":"taskCompleted"}
        {"t":0.2,"op":"a","attempt":1,"event":"finished","outcome":"success","attempts":1,"duration":0.1}
        {"t":0.3,"op":"b","attempt":1,"event":"queued","method":"GET","url":"http://127.0.0.1:9/b"}
        {"t":0.3,"op":"b","attempt":7,"event":"taskCreated","task":2,"url":"http://127.0.0.1:9/b"}
        {"t":0.4,"op":"b","attempt":7,"event":"response","status":200}
        {"t":0.4,"op":"b","attempt":7,"event":"taskCompleted"}
        {"t":0.4,"op":"b","attempt":7,"event":"finished","outcome":"success","attempts":1,"duration":0.1}

        """.write(toFile: recording, atomically: true, encoding: .utf8)
        let run = try reqtop(["whatif", recording], timeout: 90)
        XCTAssert([0, 1].contains(run.status), run.stderr)
        XCTAssert(run.stderr.contains("1 request has no recorded answer for the first attempt (b)"), run.stderr)
    }
}
