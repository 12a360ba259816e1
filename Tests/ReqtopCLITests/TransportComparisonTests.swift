import Foundation
import XCTest

/// The same plan on both transports gives the same operations, attempts, outcomes and
/// retry reasons: a plan's decisions do not depend on what carries the bytes.
final class TransportComparisonTests: XCTestCase {
    func testAPlanGivesTheSameStoryOnURLSessionAndOnNIO() throws {
        let plan = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString)-compare.json").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: plan) }
        try """
        {"retry": {"baseDelay": 0.02, "jitter": "none", "maxAttempts": 3}, "requests": [
          {"id": "ok", "url": "{{fault}}/echo"},
          {"id": "flaky", "url": "{{fault}}/flaky/compare?failures=2"},
          {"id": "throttled", "url": "{{fault}}/flaky/throttled?failures=1&status=429&retry-after=0"},
          {"id": "down", "url": "{{fault}}/status/503"},
          {"id": "missing", "url": "{{fault}}/status/404"},
          {"id": "reset", "url": "{{fault}}/reset"},
          {"id": "refused", "url": "http://127.0.0.1:1/nothing-listens"},
          {"id": "post", "method": "POST", "url": "{{fault}}/echo", "body": {"a": 1}},
          {"id": "hops", "url": "{{fault}}/redirect/2"},
          {"id": "slow", "url": "{{fault}}/hang", "timeout": 0.2, "retry": {"maxAttempts": 2}},
          {"id": "child", "url": "{{fault}}/echo?m={{post.method}}", "dependsOn": "post"}
        ]}
        """.write(toFile: plan, atomically: true, encoding: .utf8)
        func story(_ transport: String) throws -> [String: String] {
            let run = try reqtop(["run", plan, "--no-tui", "--transport", transport])
            XCTAssertEqual(run.status, 1, "down, missing, reset, refused and slow fail: \(run.stderr)")
            var story: [String: String] = [:]
            for event in run.events {
                guard let op = event["op"] as? String, let kind = event["event"] as? String else { continue }
                switch kind {
                case "retryScheduled": story[op, default: ""] += "retry(\(event["reason"] as? String ?? "")) "
                case "redirect": story[op, default: ""] += "redirect(\(event["status"] as? Int ?? 0)) "
                case "finished":
                    story[op, default: ""] += "\(event["outcome"] as? String ?? "") \(event["status"] as? Int ?? 0) after \(event["attempts"] as? Int ?? 0)"
                default: break
                }
            }
            return story
        }
        let urlsession = try story("urlsession")
        let started = Date()
        let nio = try story("nio")
        // A refused connection fails the attempt at once (AsyncHTTPClient would retry it
        // for its 10 s connect timeout): the whole plan takes about a second.
        XCTAssertLessThan(Date().timeIntervalSince(started), 8)
        XCTAssertEqual(urlsession.count, 11)
        for op in urlsession.keys.sorted() {
            XCTAssertEqual(nio[op], urlsession[op], op)
        }
        XCTAssert(urlsession["flaky"]?.hasSuffix("success 200 after 3") == true, "\(urlsession)")
        XCTAssert(urlsession["reset"]?.contains("network connection lost") == true, "\(urlsession)")
    }
}
