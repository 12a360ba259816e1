import Foundation
import XCTest

/// `reqtop diff A B`: a recording compared with itself is the same; two runs of different
/// plans name what differs, the operations only one has, and the attempts each host was sent.
final class DiffTests: XCTestCase {
    func testARunAgainstItselfAndAgainstAnotherPlan() throws {
        let folder = NSTemporaryDirectory() + "diff-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = folder + "/a.json", second = folder + "/b.json"
        try #"{"retry": {"maxAttempts": 3, "baseDelay": 0.01}, "requests": [{"id": "ok", "url": "{{fault}}/echo"}, {"id": "down", "url": "{{fault}}/status/503"}]}"#
            .write(toFile: first, atomically: true, encoding: .utf8)
        try #"{"retry": {"maxAttempts": 1}, "requests": [{"id": "ok", "url": "{{fault}}/echo"}, {"id": "down", "url": "{{fault}}/status/503"}, {"id": "new", "url": "{{fault}}/echo"}]}"#
            .write(toFile: second, atomically: true, encoding: .utf8)
        XCTAssertEqual(try reqtop(["run", first, "--no-tui", "--record", folder + "/a.jsonl"]).status, 1)
        XCTAssertEqual(try reqtop(["run", second, "--no-tui", "--record", folder + "/b.har"]).status, 1)

        let same = try reqtop(["diff", folder + "/a.jsonl", folder + "/a.jsonl"])
        XCTAssertEqual(same.status, 0, same.stderr)
        XCTAssert(same.stdout.hasPrefix("no differences between a.jsonl and a.jsonl\nhosts (a.jsonl → a.jsonl):\n"), same.stdout)
        XCTAssert(same.stdout.hasSuffix(", 0 unexplained differences (a.jsonl → a.jsonl)\n"), same.stdout)

        let diff = try reqtop(["diff", folder + "/a.jsonl", folder + "/b.har"])
        XCTAssertEqual(diff.status, 1, diff.stderr)
        XCTAssertTrue(diff.stdout.contains("  new: unexplained\n    a.jsonl: (not in this run)\n    b.har: success 200 · 1 attempt"), diff.stdout)
        XCTAssertTrue(diff.stdout.contains("  down: unexplained\n    a.jsonl: failure 503 · 3 attempts"), diff.stdout)
        XCTAssertTrue(diff.stdout.contains(", 2 unexplained differences (a.jsonl → b.har)"), diff.stdout)
        XCTAssertTrue(diff.stdout.contains("b.har: failure 503 · 1 attempt"), diff.stdout)
        XCTAssertTrue(diff.stdout.contains("summary: attempts sent upstream 4 → 3"), diff.stdout)
        XCTAssertFalse(diff.stdout.contains("  ok: unexplained"), "ok ended alike in both (its duration differs a little): \(diff.stdout)")

        let json = try reqtop(["diff", folder + "/a.jsonl", folder + "/b.har", "--json"])
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", """
            import json, sys
            d = json.loads(sys.stdin.read())
            ops = {x['op']: x for x in d['differences']}
            assert ops['new']['a'] is None and ops['new']['b']['outcome'] == 'success'
            assert ops['down']['a']['attempts'] == 3 and ops['down']['b']['attempts'] == 1
            assert d['same'] is False
            assert d['unexplained'] == 2 and ops['new']['cause'] is None
            print('ok')
            """]
        let input = Pipe(), output = Pipe()
        python.standardInput = input
        python.standardOutput = output
        try python.run()
        input.fileHandleForWriting.write(Data(json.stdout.utf8))
        try input.fileHandleForWriting.close()
        python.waitUntilExit()
        XCTAssertEqual(String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self), "ok\n", json.stdout)

        let missing = try reqtop(["diff", folder + "/nothing.jsonl", folder + "/a.jsonl"])
        XCTAssertEqual(missing.status, 2)
        XCTAssertTrue(missing.stderr.contains("nothing.jsonl"), missing.stderr)
    }
}
