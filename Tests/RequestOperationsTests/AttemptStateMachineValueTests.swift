import Foundation
@testable import RequestOperations
import XCTest

/// The machine is a value though the attempt in flight sits in a box beside its stage (#58):
/// a copy of the whole machine changes its own flight, never the other's.
final class AttemptStateMachineValueTests: XCTestCase {
    private func machineInFlight() -> AttemptStateMachine {
        var machine = AttemptStateMachine()
        _ = machine.begin(needsAdmission: false)
        _ = machine.slotGranted(slotHost: nil, prepares: false, of: machine.id)
        XCTAssertNil(machine.sent(TransportTask(identifier: 1, handle: 1), at: 0, uploadTotal: nil, of: machine.id))
        XCTAssertTrue(machine.isLead(1))
        return machine
    }

    func testACopyOfTheMachineChangesOnlyItsOwnFlight() {
        var original = machineInFlight()
        var copy = original
        XCTAssertTrue(copy.bodyBytesArrived(lead: 1, count: 300_000, at: 1, tracksProgress: true))
        XCTAssertEqual(original.takeUnannouncedBytes(at: 2), 0, "the original saw the copy's bytes")
        XCTAssertEqual(copy.takeUnannouncedBytes(at: 2), 300_000)

        // The copy's attempt ends; the original's is still in flight, with its own flight.
        let end = AttemptStateMachine.AttemptEnd(failure: nil, taskError: nil, handedOver: false, leadRecord: nil)
        XCTAssertNotNil(copy.taskEnded(1, end))
        XCTAssertFalse(copy.isLead(1))
        XCTAssertNil(copy.flightBox)
        XCTAssertTrue(original.isLead(1))
        XCTAssertNotNil(original.flightBox)
        XCTAssertTrue(original.bodyBytesArrived(lead: 1, count: 10, at: 3, tracksProgress: true))
        XCTAssertEqual(original.takeUnannouncedBytes(at: 4), 10)
    }

    func testLeavingFlightLetsGoOfTheBox() {
        var machine = machineInFlight()
        let held = machine.held
        XCTAssertEqual(held.tasks.map(\.identifier), [1], "what the stage holds is the flight's")
        _ = machine.finish(.cancelled)
        XCTAssertNil(machine.flightBox)
        XCTAssertFalse(machine.isLead(1))
    }
}
