import Foundation
import XCTest

/// A value the redaction rules take out of a parent's answer stays redacted wherever a
/// dependent request carries it. Before: `{{login.access_token}}` templated into a URL or a
/// header with a plain name (`X-Forward`) was recorded in the clear in `built`, stdout, JSON
/// lines, HAR, replay and `export --curl/--plan`, while the parent's body redacted it.
final class DerivedSecretTests: XCTestCase {
    func testATemplatedTokenIsRedactedInEveryOutput() throws {
        let secret = "sk-derived-0123456789"
        let folder = NSTemporaryDirectory() + "derived-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // The echo route answers {"query": {"access_token": …}}: a secret member of the answer.
        for bodyCap in ["65536", "0"] {
            let plan = folder + "/plan-\(bodyCap).json"
            try """
            {"retry": {"maxAttempts": 1}, "requests": [
              {"id": "login", "url": "{{fault}}/echo?access_token=\(secret)"},
              {"id": "use", "dependsOn": "login", "method": "POST", "url": "{{fault}}/echo?forward={{login.query.access_token}}",
               "headers": {"X-Forward": "{{login.query.access_token}}", "Content-Type": "application/json"},
               "body": {"note": "{{login.query.access_token}}"}}
            ]}
            """.write(toFile: plan, atomically: true, encoding: .utf8)
            let jsonl = folder + "/run-\(bodyCap).jsonl", har = folder + "/run-\(bodyCap).har"
            let run = try reqtop(["run", plan, "--no-tui", "--body-cap", bodyCap, "--record", jsonl])
            XCTAssertEqual(run.status, 0, run.stderr)
            let harRun = try reqtop(["run", plan, "--no-tui", "--body-cap", bodyCap, "--record", har])
            XCTAssertEqual(harRun.status, 0, harRun.stderr)
            var outputs = [("stdout", run.stdout), ("stderr", run.stderr), ("JSON lines", try String(contentsOfFile: jsonl, encoding: .utf8)),
                           ("HAR", try String(contentsOfFile: har, encoding: .utf8))]
            for arguments in [["export", jsonl, "--curl", "use"], ["export", jsonl, "--plan", "use"], ["replay", jsonl, "--no-tui"],
                              ["export", har, "--curl", "use"]] {
                let out = try reqtop(arguments)
                XCTAssertEqual(out.status, 0, "\(arguments): \(out.stderr)")
                outputs.append(("\(arguments)", out.stdout + out.stderr))
            }
            for (name, text) in outputs {
                XCTAssertFalse(text.contains(secret), "bodyCap \(bodyCap), \(name) holds the token: \(text.prefix(3000))")
            }
            XCTAssert(outputs[0].1.contains(#""X-Forward":"[redacted]""#), outputs[0].1)
            XCTAssert(outputs[0].1.contains("forward=%5Bredacted%5D"), outputs[0].1)
        }
        // With --no-redact, the person asked for the values.
        let plain = try reqtop(["run", folder + "/plan-0.json", "--no-tui", "--no-redact"])
        XCTAssert(plain.stdout.contains(secret), plain.stdout)
    }
}
