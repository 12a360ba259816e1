import Foundation
@testable import ReqtopApplication
import RequestOperations
import XCTest

/// The merged monitor's state alone, input by input, with strings for connections: no
/// socket, no thread (``AttachedPrograms`` owns one and gives it these inputs).
final class AttachedFleetTests: XCTestCase {
    let start = Date(timeIntervalSince1970: 1_000_000)

    func facts(_ pid: Int32, _ name: String, faults: Int = 0, readOnly: Bool = false) -> EndpointHelloFacts {
        EndpointHelloFacts(pid: pid, name: name, time: 0, suspended: false, faults: faults, readOnly: readOnly)
    }

    func testProgramsJoinShowTheirEventsPauseAndEnd() {
        var fleet = AttachedFleet<String>(start: start)
        XCTAssertTrue(fleet.adopt("api-socket", facts(4121, "api"), at: start))
        XCTAssertTrue(fleet.adopt("worker-socket", facts(4122, "worker", faults: 2), at: start))
        XCTAssertEqual(fleet.status, "ATTACHED 2 programs")
        XCTAssertTrue(fleet.faultsActive, "the worker has faults on")

        let merged = fleet.eventRead(RequestEvent(time: 1, operationID: "login", attempt: 1,
                                                  payload: .queued(method: "GET", url: "http://h/", headers: [:], maxAttempts: nil)), from: 4121)
        XCTAssertEqual(merged.operationID, "4121/login")
        _ = fleet.eventRead(RequestEvent(time: 1, operationID: "feed", attempt: 1,
                                         payload: .queued(method: "GET", url: "http://h/", headers: [:], maxAttempts: nil)), from: 4122)

        // The worker fell behind: what the api showed is shown again, not the worker's.
        let (others, label) = fleet.fellBehind(4122)
        XCTAssertEqual(label, "worker 4122")
        XCTAssertEqual(others.map(\.operationID), ["4121/login"])

        XCTAssertTrue(fleet.suspended(4121, true))
        XCTAssertFalse(fleet.suspended(4121, false))
        fleet.faultsChanged(4122, to: 0)
        XCTAssertFalse(fleet.faultsActive)

        let lines = fleet.programLines(at: start)
        XCTAssertEqual(lines.map(\.label), ["api 4121", "worker 4122"])
        XCTAssertEqual(lines.first?.live, 1, "the api's login is live")

        XCTAssertEqual(fleet.ended(4122), "worker 4122")
        XCTAssertEqual(fleet.clients.keys.sorted(), [4121])
        XCTAssertEqual(fleet.status, "ATTACHED 2 programs (1 ended)")
        XCTAssertEqual(fleet.goodbye, "reqtop: detached from 2 programs (1 running on, 1 had ended)")
    }

    func testASocketIsTriedOnceAtATimeAndNothingJoinsAfterTheStop() {
        var fleet = AttachedFleet<String>(start: start)
        XCTAssertTrue(fleet.claim(7))
        XCTAssertFalse(fleet.claim(7), "tried already")
        fleet.release(7)
        XCTAssertTrue(fleet.claim(7), "a socket that did not answer is tried again")
        XCTAssertTrue(fleet.adopt("a", facts(8, "a"), at: start))
        XCTAssertFalse(fleet.claim(8), "attached")
        XCTAssertEqual(fleet.stop(), ["a"])
        XCTAssertFalse(fleet.adopt("late", facts(9, "late"), at: start), "the caller closes it")
        XCTAssertFalse(fleet.claim(10))
        XCTAssertNil(fleet.ended(8), "a program ending after the stop is not said")
    }
}
