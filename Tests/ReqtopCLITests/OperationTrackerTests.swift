import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import ReqtopCLI
import RequestOperations
import XCTest

/// A session tracks what it added so it can cancel what still runs at the end — and must
/// not keep what finished (a monitor runs for days; the demo grew ~35 KB an operation).
final class OperationTrackerTests: XCTestCase {
    func testFinishedOperationsAreLetGoAndRunningOnesAreKept() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 8, earlyRetry: nil)
        let tracker = OperationTracker(hub: queue.events)
        let hanging = queue.add(URLRequest(url: server.url("/hang")), id: "hanging")
        tracker.track(hanging)
        for wave in 0..<10 {
            for index in 0..<100 {
                tracker.track(queue.add(URLRequest(url: server.url("/echo")), id: "w\(wave)-\(index)"))
            }
            while queue.operations.count > 1 { usleep(2_000) }
        }
        let kept = tracker.all
        XCTAssertLessThanOrEqual(kept.count, 200, "1,001 tracked, 1,000 finished: kept \(kept.count)")
        XCTAssert(kept.contains { $0 === hanging }, "the running one is kept, to be cancelled")
        tracker.cancelRunning(by: "test")
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(hanging.result?.outcome, .cancelled)
        XCTAssertEqual(tracker.summary.total, 1_001)
    }
}
