import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import ReqtopApplication
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

    /// A transparent proxy's relayed answers are counted apart, in the run's summary and a
    /// replay's, and do not make either exit 1.
    func testRelayedAnswersAreCountedApartAndAreNoFailure() {
        let events = [("ok", RequestOutcome.success, 200), ("gone", .relayed, 404), ("down", .failure, nil)].flatMap { id, outcome, status in
            [RequestEvent(time: 0, operationID: id, attempt: 1, payload: .started),
             RequestEvent(time: 1, operationID: id, attempt: 1, payload: .finished(outcome: outcome, status: status, attempts: 1, duration: 1, reason: nil))]
        }
        let run = RunSummary(tally: SessionTally(events), duration: 1)
        XCTAssertEqual(run.line, "reqtop: 3 operations in 1.0s: 1 succeeded, 1 relayed (answers other than 2xx, passed on), 1 failed, 0 cancelled (3 attempts)")
        XCTAssertEqual(run.exitStatus, 1, "the failure")
        let replay = ReplaySummary(events)
        XCTAssertTrue(replay.line.contains("1 succeeded, 1 relayed (answers other than 2xx, passed on), 1 failed"), replay.line)
        let relayedOnly = ReplaySummary(Array(events.prefix(4)))
        XCTAssertEqual(relayedOnly.exitStatus, 0, "a relayed 404 is no failure")
        XCTAssertEqual(RunSummary(tally: SessionTally(Array(events.prefix(4))), duration: 1).exitStatus, 0)
    }

    /// A tally keeps the operations still running and the last few that finished, not every
    /// id it saw (a proxy counts all day); each operation still counts once.
    func testATallyHoldsOnlyRunningOperationsAndTheLastFew() {
        func event(_ id: String, _ payload: RequestEvent.Payload) -> RequestEvent {
            RequestEvent(time: 1, operationID: id, attempt: 1, payload: payload)
        }
        let done = RequestEvent.Payload.finished(outcome: .success, status: 200, attempts: 1, duration: 1, reason: nil)
        var tally = SessionTally()
        for index in 0..<10_000 {
            let id = "op-\(index)", other = "op-\(index + 1_000_000)"
            // Two operations interleaved, a late event after each one's end.
            tally.add([event(id, .started), event(other, .started), event(id, .data(bytes: 1)), event(other, done),
                       event(id, done), event(other, .data(bytes: 1)), event("", .circuitHalfOpen(host: "h")), event(id, .sent)])
        }
        XCTAssertEqual(tally.operations, 20_000)
        XCTAssertEqual(tally.count(.success), 20_000)
        XCTAssertEqual(tally.attempts, 20_000)
        XCTAssertEqual(tally.unfinished, 0)
        XCTAssertLessThanOrEqual(tally.heldIDs, SessionTally.recentLimit + 1)
        // A second `finished` changes nothing; a recording that begins inside an operation counts it.
        tally.add([event("op-9999", .finished(outcome: .failure, status: nil, attempts: 1, duration: 1, reason: nil)), event("mid", .data(bytes: 5))])
        XCTAssertEqual(tally.count(.failure), 0)
        XCTAssertEqual(tally.operations, 20_001)
        XCTAssertEqual(tally.unfinished, 1)
    }
}
