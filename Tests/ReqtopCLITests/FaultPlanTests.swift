import FaultServer
import Foundation
import XCTest

/// A plan's `"faults"` for a chaos run: injected failures the retry machinery meets, each
/// marked in the events and in HAR, so a recording never passes one off as the server's.
final class FaultPlanTests: XCTestCase {
    func testAPlanInjectsFailuresAndEveryOneIsMarked() throws {
        let folder = NSTemporaryDirectory() + "faults-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plan = folder + "/plan.json", har = folder + "/run.har"
        try """
        {"retry": {"maxAttempts": 3, "baseDelay": 0.01}, "rateLimitPushback": false,
         "faults": [{"match": "path:/echo", "status": 503, "rate": 1}],
         "requests": [{"id": "echo", "url": "{{fault}}/echo"}, {"id": "fine", "url": "{{fault}}/status/200"}]}
        """.write(toFile: plan, atomically: true, encoding: .utf8)
        let run = try reqtop(["run", plan, "--no-tui", "--record", har])
        XCTAssertEqual(run.status, 1, "the echo fails: every attempt was answered 503 by the rule")
        XCTAssertTrue(run.stderr.contains("FAULTS ON: 1 rule from the plan"), run.stderr)
        let injected = run.events.filter { $0["event"] as? String == "injected" }
        XCTAssertEqual(injected.count, 3, "each of the three attempts")
        XCTAssertTrue(injected.allSatisfy { $0["op"] as? String == "echo" && $0["fault"] as? String == "status 503" && $0["by"] as? String == "plan" },
                      "\(injected)")
        XCTAssertTrue(run.events.contains { $0["event"] as? String == "finished" && $0["op"] as? String == "fine" && $0["outcome"] as? String == "success" })
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", """
            import json, sys
            entries = json.load(open(sys.argv[1]))['log']['entries']
            marked = [e for e in entries if e.get('comment', '').startswith('injected by reqtop')]
            print(len(marked), len(entries))
            """, har]
        let out = Pipe()
        python.standardOutput = out
        try python.run()
        python.waitUntilExit()
        XCTAssertEqual(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self), "3 4\n", "the HAR says which answers were injected")

        for (faults, message) in [(#"[{"match": "path:/x"}]"#, "faults[0]: no effect"),
                                  (#"[{"match": "path:/x", "reset": true, "stall": true}]"#, "one effect per rule"),
                                  (#"[{"match": "status:5xx", "reset": true}]"#, "faults[0].match"),
                                  (#"[{"match": "path:/x", "status": 503, "rate": 2}]"#, "faults[0].rate")] {
            try #"{"faults": \#(faults), "requests": [{"url": "{{fault}}/echo"}]}"#.write(toFile: plan, atomically: true, encoding: .utf8)
            let bad = try reqtop(["run", plan, "--no-tui"])
            XCTAssertEqual(bad.status, 2, bad.stderr)
            XCTAssertTrue(bad.stderr.contains(message), "\(message): \(bad.stderr)")
        }
    }

    /// A chaos run: 30 % of 200 requests answered 503 by a rule; the host's retry budget
    /// (20 % of its requests) holds the load under 1.25× — without it, the retries would add
    /// over 40 %.
    func testThirtyPercentInjected503sAndTheRetryBudgetHoldsTheLoad() throws {
        let folder = NSTemporaryDirectory() + "chaos-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plan = folder + "/plan.json"
        let requests = (1...200).map { #"{"id": "r\#($0)", "url": "{{fault}}/status/200"}"# }.joined(separator: ", ")
        func amplification(budget: String) throws -> Double {
            try """
            {"retry": {"maxAttempts": 5, "baseDelay": 0.005, "maxDelay": 0.02}, "rateLimitPushback": false, "circuitBreaker": false,
             "maxConcurrent": 20, "retryBudgetPerHost": \(budget),
             "faults": [{"match": "path:/status", "status": 503, "rate": 0.3}], "requests": [\(requests)]}
            """.write(toFile: plan, atomically: true, encoding: .utf8)
            let run = try reqtop(["run", plan, "--no-tui", "--body-cap", "0"])
            let attempts = run.events.filter { $0["event"] as? String == "taskCreated" }.count
            XCTAssertGreaterThan(run.events.filter { $0["event"] as? String == "injected" }.count, 20, "the rule injected")
            return Double(attempts) / 200
        }
        let held = try amplification(budget: #"{"percent": 20, "window": 60, "minPerSecond": 0}"#)
        XCTAssertLessThanOrEqual(held, 1.25, "the budget holds the load: \(held)×")
        let unbounded = try amplification(budget: "false")
        XCTAssertGreaterThan(unbounded, held, "without a budget the retries add more: \(unbounded)× against \(held)×")
    }
}
