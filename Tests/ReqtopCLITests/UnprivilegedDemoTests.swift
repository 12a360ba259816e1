import FaultServer
import Foundation
import XCTest

/// `reqtop demo`, the README's first command, for a user who is not root. Before: the fault
/// server set `SO_DEBUG` (level SOL_SOCKET, option 1: what `.socketOption(.tcp_nodelay)`
/// meant) on every connection it accepted, which needs CAP_NET_ADMIN: every connection
/// failed for everyone but root, and the quick demo ended 0 of 6 succeeded.
final class UnprivilegedDemoTests: XCTestCase {
    func testTheQuickDemoWorksForAUserWhoIsNotRoot() throws {
        let run = try reqtop(["demo", "--no-tui", "--scenario", "quick"], unprivileged: true)
        XCTAssertEqual(run.status, 1, "some demo requests fail on purpose: \(run.stderr)")
        // As root: 3 succeeded, 2 failed, 1 cancelled. The same for anyone.
        XCTAssert(run.stderr.contains("6 operations in") && run.stderr.contains("3 succeeded, 2 failed, 1 cancelled"), run.stderr)
    }

    func testAPlanOnTheEmbeddedFaultServerWorksForAUserWhoIsNotRoot() throws {
        let plan = NSTemporaryDirectory() + "unprivileged-\(UUID().uuidString.prefix(8)).json"
        try #"{"requests": [{"id": "a", "url": "{{fault}}/echo"}, {"id": "b", "url": "{{fault}}/bytes/100000"}]}"#
            .write(toFile: plan, atomically: true, encoding: .utf8)
        chmod(plan, 0o644)
        defer { try? FileManager.default.removeItem(atPath: plan) }
        let run = try reqtop(["run", plan, "--no-tui"], unprivileged: true)
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssert(run.stderr.contains("2 succeeded, 0 failed"), run.stderr)
    }
}
