import Foundation
@testable import ReqtopApplication
@testable import ReqtopCLI
import RequestOperations
import XCTest

/// Two runs on one time axis (`replay A --against B`): each of B's operations right under A's
/// of the same id, both from the start of their run, each operation's events in order.
final class TwoRunsTests: XCTestCase {
    func testTheSecondRunsOperationsComeUnderTheFirstsOnOneAxis() {
        func run(_ origin: TimeInterval, _ ids: [(String, TimeInterval, TimeInterval)]) -> [RequestEvent] {
            ids.flatMap { id, start, end in [
                RequestEvent(time: origin + start, operationID: id, attempt: 1, payload: .queued(method: "GET", url: "http://h:80/\(id)", headers: [:], maxAttempts: 1)),
                RequestEvent(time: origin + end, operationID: id, attempt: 1, payload: .finished(outcome: .success, status: 200, attempts: 1, duration: end - start, reason: nil)),
            ] }.sorted { $0.time < $1.time } + [RequestEvent(time: origin, operationID: "", attempt: 0, payload: .circuitHalfOpen(host: "h:80"))]
        }
        let a = run(100, [("x", 0, 1), ("y", 0, 3)])
        let b = run(5, [("x", 0.004, 2), ("y", 0.002, 0.5), ("z", 1, 1.5)])
        let merged = TwoRuns.merge(a, b, name: "whatif")
        let firsts = merged.reduce(into: [String]()) { order, event in
            if !event.operationID.isEmpty, !order.contains(event.operationID) { order.append(event.operationID) }
        }
        XCTAssertEqual(firsts, ["x", "x@whatif", "y", "y@whatif", "z@whatif"], "each under its own")
        XCTAssertEqual(merged.map(\.time), merged.map(\.time).sorted(), "one time axis")
        XCTAssertEqual(merged.first { $0.operationID == "x@whatif" }?.time ?? -1, 0, accuracy: 1e-9, "both start together")
        XCTAssertEqual(merged.last { $0.operationID == "x@whatif" }?.time ?? -1, 1.996, accuracy: 1e-9, "and keep their own length")
        XCTAssertEqual(merged.filter { $0.operationID.isEmpty }.count, 1, "the second run's host-level events are left out")
    }

    func testAgainstIsRefusedWithSend() throws {
        let run = try reqtop(["replay", "a.jsonl", "--against", "b.jsonl", "--send"])
        XCTAssertEqual(run.status, 2)
        XCTAssert(run.stderr.contains("--against shows two runs; --send sends one"), run.stderr)
    }
}
