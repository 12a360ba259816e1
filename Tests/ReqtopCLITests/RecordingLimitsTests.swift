import Foundation
import XCTest

/// What reqtop records it reads back, and numbers a plan may hold are the numbers it means.
final class RecordingLimitsTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = try makeTemporaryFolder("limits")
    }

    /// Before: `--body-cap` above about 4 MiB recorded lines that `replay` and `export` then
    /// refused (exit 2): the readers' 4 MiB line limit.
    func testALargeBodyCapIsRecordedAndReadBack() throws {
        let plan = folder + "/plan.json", recording = folder + "/run.jsonl"
        try #"{"requests": [{"id": "big", "url": "{{fault}}/bytes/8000000"}]}"#.write(toFile: plan, atomically: true, encoding: .utf8)
        let run = try reqtop(["run", plan, "--no-tui", "--body-cap", "16000000", "--record", recording])
        XCTAssertEqual(run.status, 0, run.stderr)
        let replay = try reqtop(["replay", recording, "--no-tui"])
        XCTAssertEqual(replay.status, 0, replay.stderr)
        XCTAssert(replay.stdout.contains(#""totalBytes":8000000"#), String(replay.stdout.prefix(500)))
        let har = try reqtop(["export", recording, "--har", folder + "/run.har"])
        XCTAssertEqual(har.status, 0, har.stderr)
        let diff = try reqtop(["diff", recording, recording])
        XCTAssertEqual(diff.status, 0, diff.stderr)

        let over = try reqtop(["run", plan, "--no-tui", "--body-cap", "40000000"])
        XCTAssertEqual(over.status, 2)
        XCTAssert(over.stderr.contains("--body-cap 40000000: at most 33554432"), over.stderr)
        try #"{"bodyCap": 40000000, "requests": [{"url": "{{fault}}/echo"}]}"#.write(toFile: plan, atomically: true, encoding: .utf8)
        let planOver = try reqtop(["run", plan, "--no-tui"])
        XCTAssertEqual(planOver.status, 2)
        XCTAssert(planOver.stderr.contains("bodyCap: expected a whole number of at most 33554432"), planOver.stderr)
    }

    /// Before: `maxFileBytes` or `truncate` of 2^53 − 1 were refused as "expected a whole
    /// number of at least 1", and a fault `delay` of 0 as "0 would fail every request".
    func testByteCountsUpTo2To53AndADelayOf0AreTaken() throws {
        let plan = folder + "/plan.json"
        try """
        {"faults": [{"match": "path:/echo", "delay": 0}, {"match": "path:/bytes", "truncate": 9007199254740991}],
         "requests": [{"id": "a", "url": "{{fault}}/echo"},
                      {"id": "b", "url": "{{fault}}/bytes/1000", "saveTo": "b.bin", "maxFileBytes": 9007199254740991}]}
        """.write(toFile: plan, atomically: true, encoding: .utf8)
        let run = try reqtop(["run", plan, "--no-tui"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual((try? Data(contentsOf: URL(fileURLWithPath: folder + "/b.bin")))?.count, 1000)
        try #"{"requests": [{"url": "{{fault}}/bytes/10", "saveTo": "c.bin", "maxFileBytes": 9007199254740992}]}"#
            .write(toFile: plan, atomically: true, encoding: .utf8)
        let over = try reqtop(["run", plan, "--no-tui"])
        XCTAssertEqual(over.status, 2)
        XCTAssert(over.stderr.contains("maxFileBytes: expected a whole number of at most 9007199254740991"), over.stderr)
    }

    /// Before: the `finished` event's reason said "transport error -1001 (timed out)" where
    /// the attempt had named the read timeout, and the same general words for a file's limit.
    func testTheFinishedReasonNamesTheLimitTheAttemptNamed() throws {
        let plan = folder + "/plan.json"
        try #"""
        {"retry": {"maxAttempts": 1}, "requests": [
          {"id": "slow", "url": "{{fault}}/drip?bytes=100&duration=3000&chunks=2", "readTimeout": 0.5},
          {"id": "capped", "url": "{{fault}}/bytes/300000", "saveTo": "capped.bin", "maxFileBytes": 1000}]}
        """#.write(toFile: plan, atomically: true, encoding: .utf8)
        let run = try reqtop(["run", plan, "--no-tui"])
        XCTAssertEqual(run.status, 1, run.stderr)
        let reasons = Dictionary(uniqueKeysWithValues: run.events.filter { $0["event"] as? String == "finished" }
            .map { ($0["op"] as? String ?? "", $0["reason"] as? String ?? "") })
        XCTAssertEqual(reasons["slow"], "transport error -1001 (no byte for 0.5s (read timeout)); retries exhausted after 1 of 1 attempts")
        XCTAssert(reasons["capped"]?.contains("over the 1000-byte limit for its file (RequestOptions.maxFileBytes)") == true, "\(reasons)")
    }
}
