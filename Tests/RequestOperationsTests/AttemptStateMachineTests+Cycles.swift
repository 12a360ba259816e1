import Foundation
@testable import RequestOperations
import XCTest

/// The machine through whole cycles as an operation lives them: late inputs, numbering,
/// breakpoints, the deadline, retries (the table of every stage × input is in
/// AttemptStateMachineTests.swift).
extension AttemptStateMachineTests {
    func testAnInputForAnAttemptThatIsOverIsRefusedWhereverItComes() {
        var machine = Machine()
        _ = machine.begin(needsAdmission: false)
        let old = machine.id
        _ = machine.slotGranted(slotHost: nil, prepares: false, of: old)
        _ = machine.sent(handles.task(1), at: 0, uploadTotal: nil, of: old)
        _ = machine.taskEnded(1, answered)
        XCTAssertNotNil(machine.retryScheduled(until: 5, of: old))
        guard case .askForSlot(let next, _) = machine.begin(needsAdmission: false, expected: old) else { return XCTFail("the retry begins") }
        XCTAssertEqual(next, old + 1)
        XCTAssertEqual(machine.attempt, 2)
        let late = machine.retryWaitStarted(timer: handles.timer("lateTimer"), observation: nil, of: old)
        XCTAssertEqual(handles.released(late), ["lateTimer"], "the first attempt's timer, made late, is cancelled")
        XCTAssertEqual(machine.rateLimitPause(host: "h", until: 1, of: old), .refuse)
        XCTAssertEqual(machine.slotGranted(slotHost: nil, prepares: false, of: old).0, .refuse, "the old attempt's slot goes back")
        if case .refuse = machine.begin(needsAdmission: false, expected: old) {} else { XCTFail("an attempt begins once") }
    }

    func testTheSamePauseOrBreakerWaitAgainIsNotAnnouncedAgain() {
        var machine = Machine()
        _ = machine.begin(needsAdmission: false)
        XCTAssertEqual(machine.circuitWait(host: "h", handles.wait("w1"), of: machine.id).change, .announce)
        XCTAssertEqual(machine.circuitWait(host: "h", handles.wait("w2"), of: machine.id).change, .stay)
        XCTAssertEqual(machine.rateLimitPause(host: "h", until: 5, of: machine.id), .announce)
        XCTAssertEqual(machine.rateLimitPause(host: "h", until: 5, of: machine.id), .stay)
        XCTAssertEqual(machine.rateLimitPause(host: "h", until: 6, of: machine.id), .announce, "a longer pause is news")
    }

    func testTheBreakersLongestWaitIsTimedOnceFromTheFirstWait() {
        var machine = Machine()
        _ = machine.begin(needsAdmission: false)
        XCTAssertTrue(machine.circuitWait(host: "h", handles.wait("w1"), of: machine.id).wantsTimer)
        XCTAssertTrue(machine.circuitTimerStarted(handles.timer("first"), of: machine.id).isEmpty)
        let again = machine.circuitWait(host: "h", handles.wait("w2"), of: machine.id)
        XCTAssertFalse(again.wantsTimer)
        XCTAssertEqual(handles.released(again.unused), ["w1"], "the older wait goes, the timer stays")
        XCTAssertEqual(handles.released(machine.held), ["w2", "first"])
    }

    func testARetryIsBroughtForwardNeverPushedBack() {
        var machine = Machine()
        _ = machine.begin(needsAdmission: false)
        _ = machine.slotGranted(slotHost: nil, prepares: true, of: machine.id)
        _ = machine.retryScheduled(until: 10, of: machine.id)
        _ = machine.retryWaitStarted(timer: handles.timer("t10"), observation: nil, of: machine.id)
        XCTAssertNil(machine.retrySooner(until: 12, of: machine.id))
        XCTAssertNil(machine.retrySooner(until: 10, of: machine.id), "the same moment is not sooner")
        XCTAssertEqual(machine.retrySooner(until: 3, of: machine.id).map(handles.released), ["t10"])
        XCTAssertEqual(machine.phase, .waitingToRetry(until: 3))
    }

    func testAttemptsAreNumberedByTheMachine() {
        var machine = Machine()
        _ = machine.begin(needsAdmission: false)
        _ = machine.slotGranted(slotHost: nil, prepares: false, of: machine.id)
        _ = machine.sent(handles.task(1), at: 0, uploadTotal: nil, of: machine.id)
        XCTAssertEqual(machine.hedgeSent(handles.task(2), record: 1, lead: 0, nextTimer: nil, of: machine.id), 2, "a hedge is attempt 2")
        _ = machine.taskEnded(1, answered)
        _ = machine.requeue(needsAdmission: false, of: machine.id)
        XCTAssertEqual([machine.attempt, machine.requeues], [3, 1], "a requeue is attempt 3, not counted against the policy")
        _ = machine.slotGranted(slotHost: nil, prepares: true, of: machine.id)
        _ = machine.retryScheduled(until: 1, of: machine.id)
        XCTAssertEqual(machine.attempt, 4)
    }

    func testTheBreakpointStageIsKnownUntilTheStopIsResolved() {
        var before = Machine()
        _ = before.begin(needsAdmission: true)
        _ = before.stopBeforeSending(at: 1, of: before.id)
        XCTAssertEqual(before.breakpointStage, .beforeSend)
        guard case .admit = before.resolveBreakpoint(needsAdmission: true) else { return XCTFail("admission runs") }
        XCTAssertEqual(before.phase, .intercepting)
        XCTAssertNil(before.breakpointStage)

        var after = Machine()
        _ = after.begin(needsAdmission: false)
        _ = after.slotGranted(slotHost: nil, prepares: false, of: after.id)
        _ = after.sent(handles.task(1), at: 0, uploadTotal: nil, of: after.id)
        _ = after.taskEnded(1, answered)
        _ = after.stopAfterAnswer(at: 2, of: after.id)
        XCTAssertEqual(after.breakpointStage, .afterResponse)
        guard case .decide(_, let end) = after.resolveBreakpoint(needsAdmission: true) else { return XCTFail("the answer goes on") }
        XCTAssertEqual(end, answered, "with the answer it stopped with")
        XCTAssertNil(after.breakpointStage)
        XCTAssertNotNil(after.retryScheduled(until: 3, of: after.id), "the answer let go of fails into a retry")
    }

    func testTheDeadlineStandsStillAtABreakpointAndGoesWithTheEnd() {
        var machine = Machine()
        XCTAssertTrue(machine.deadlineStarted(handles.timer("deadline"), at: 30))
        XCTAssertNil(machine.deadlineLeft, "running, not paused")
        let paused = machine.pauseDeadline(at: 12)
        XCTAssertEqual((paused as? NamedTimer)?.name, "deadline", "its timer is cancelled while paused")
        XCTAssertEqual(machine.deadlineLeft, 18)
        XCTAssertNil(machine.pauseDeadline(at: 13), "paused once")
        XCTAssertTrue(machine.deadlineStarted(handles.timer("again"), at: 40))
        XCTAssertEqual(machine.finish(.cancelled).map(handles.released), ["again"], "the end lets go of the deadline's timer")
        XCTAssertFalse(machine.deadlineStarted(handles.timer("late"), at: 50), "none after the end")
        XCTAssertNil(machine.deadlineLeft)
    }

    func testAWholeOperationAsTheEngineLivesIt() {
        var m = Machine()
        guard case .admit(let id, _) = m.begin(needsAdmission: true) else { return XCTFail("admission first") }
        XCTAssertEqual(m.waitForReactor("refresh", of: id), .announce)
        XCTAssertEqual(m.phase, .waitingForReactor("refresh"))
        XCTAssertEqual(m.reactorFinished(of: id), .announce)
        XCTAssertEqual(m.hold(batch: "b", of: id), .announce)
        XCTAssertEqual(m.released(of: id), .announce)
        XCTAssertTrue(m.intercepted(of: id))
        XCTAssertEqual(m.rateLimitPause(host: "h", until: 2, of: id), .announce)
        XCTAssertTrue(m.rateLimitPauseOver(of: id))
        XCTAssertEqual(m.circuitWait(host: "h", handles.wait("w"), of: id).change, .announce)
        XCTAssertTrue(m.circuitPassed(handles.pass("p"), of: id).0)
        XCTAssertEqual(m.slotGranted(slotHost: nil, prepares: true, of: id).0, .prepare)
        XCTAssertEqual(m.slotReturned(of: id).map(handles.released), ["slot", "p"], "the breaker opened meanwhile")
        XCTAssertEqual(m.slotGranted(slotHost: nil, prepares: true, of: id).0, .prepare)
        XCTAssertNil(m.sent(handles.task(1), at: 0, uploadTotal: nil, of: id))
        XCTAssertEqual(m.phase, .inFlight)
        XCTAssertNotNil(m.taskEnded(1, answered))
        XCTAssertNotNil(m.retryScheduled(until: 9, of: id))
        XCTAssertEqual(m.phase, .waitingToRetry(until: 9))
        guard case .askForSlot(let second, _) = m.begin(needsAdmission: false, expected: id) else { return XCTFail("the retry") }
        XCTAssertEqual(m.slotGranted(slotHost: nil, prepares: false, of: second).0, .send)
        XCTAssertNil(m.sent(handles.task(2), at: 0, uploadTotal: nil, of: second))
        XCTAssertNotNil(m.taskEnded(2, AttemptStateMachine.AttemptEnd(failure: nil, taskError: nil)))
        XCTAssertNotNil(m.finish(.success))
        XCTAssertEqual(m.phase, .finished(.success))
        if case .refuse = m.begin(needsAdmission: false) {} else { XCTFail("nothing after the end") }
        XCTAssertNil(m.finish(.failure), "an operation ends once")
    }
}
