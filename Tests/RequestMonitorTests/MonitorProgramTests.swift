import Foundation
@testable import RequestMonitor
import RequestOperations
import XCTest

/// Every input the screen gets goes through `MonitorProgram.update`: events, a reset, the
/// source's end, keys and answers, and each frame. Before, the screen loop applied events
/// to the model itself and settled the selection, the scroll and "ended" in its own code,
/// which no test could reach without a terminal.
final class MonitorProgramTests: XCTestCase {
    private func lifecycle(_ id: String, at start: TimeInterval, finished: Bool) -> [RequestEvent] {
        var events = [RequestEvent(time: start, operationID: id, attempt: 1,
                                   payload: .queued(method: "GET", url: "http://h/\(id)", headers: [:], maxAttempts: 1)),
                      RequestEvent(time: start + 0.01, operationID: id, attempt: 1, payload: .started)]
        if finished {
            events.append(RequestEvent(time: start + 0.5, operationID: id, attempt: 1,
                                       payload: .finished(outcome: .success, status: 200, attempts: 1, duration: 0.49, reason: nil)))
        }
        return events
    }

    func testEventsThenAFrameFollowTheNewestAndKeepItInView() {
        var program = MonitorProgram(source: "test", canCommand: true, canCancel: true)
        for index in 0..<30 { _ = program.update(.events(lifecycle("op\(index)", at: Double(index), finished: false))) }
        _ = program.update(.frame(clock: 31, pageSize: 10, playback: nil))
        XCTAssertEqual(program.state.selectedID, "op29", "following: the newest is selected")
        XCTAssertEqual(program.state.scroll, 20, "and scrolled into view")
        XCTAssertTrue(program.isActive(playing: false), "running operations keep the frames coming")

        // A key stops following; new events no longer move the selection.
        _ = program.update(.action(.up), clock: 31, pageSize: 10)
        _ = program.update(.events(lifecycle("op30", at: 31, finished: false)))
        _ = program.update(.frame(clock: 32, pageSize: 10, playback: "REPLAY 1×"))
        XCTAssertEqual(program.state.selectedID, "op28")
        XCTAssertEqual(program.state.playback, "REPLAY 1×")
    }

    func testTheSourcesEndShowsOnlyOnceEveryOperationFinishedAndStopsTheClock() {
        var program = MonitorProgram(source: "test", canCommand: false, canCancel: false)
        _ = program.update(.events(lifecycle("a", at: 0, finished: true) + lifecycle("b", at: 1, finished: false)))
        _ = program.update(.sourceComplete("ENDED: every operation finished"))
        _ = program.update(.frame(clock: 50, pageSize: 10, playback: nil))
        XCTAssertNil(program.state.ended, "b is still running")
        XCTAssertEqual(program.now(clock: 50), 50)
        _ = program.update(.events([RequestEvent(time: 2, operationID: "b", attempt: 1,
                                                 payload: .finished(outcome: .failure, status: 503, attempts: 1, duration: 1, reason: "status 503"))]))
        _ = program.update(.frame(clock: 60, pageSize: 10, playback: nil))
        XCTAssertEqual(program.state.ended, "ENDED: every operation finished")
        XCTAssertEqual(program.now(clock: 60), 2, "the clock stands still at the last event")
        XCTAssertFalse(program.isActive(playing: true), "an ended replay draws no more frames by itself")
    }

    func testAResetForgetsTheRowsAndTheSelectionFollowsWhatIsLeft() {
        var program = MonitorProgram(source: "test", canCommand: true, canCancel: true)
        _ = program.update(.events(lifecycle("a", at: 0, finished: true)))
        _ = program.update(.frame(clock: 1, pageSize: 10, playback: nil))
        XCTAssertEqual(program.state.selectedID, "a")
        _ = program.update(.reset)
        _ = program.update(.frame(clock: 1, pageSize: 10, playback: nil))
        XCTAssertTrue(program.model.rows.isEmpty)
        XCTAssertNil(program.state.selectedID)
    }

    func testKeysAskForCommandsThroughTheSameUpdate() {
        var program = MonitorProgram(source: "test", canCommand: true, canCancel: true)
        _ = program.update(.events(lifecycle("a", at: 0, finished: false)))
        _ = program.update(.frame(clock: 1, pageSize: 10, playback: nil))
        XCTAssertEqual(program.update(.action(.retry), clock: 1, pageSize: 10), [.command(.queue(.retry(operation: "a")))])
        _ = program.update(.action(.answered(.queue(.retry(operation: "a")), CommandAnswer("retrying a"))))
        XCTAssertEqual(program.state.flash, "retrying a")
        var readOnly = MonitorProgram(source: "test", canCommand: false, canCancel: false)
        _ = readOnly.update(.events(lifecycle("a", at: 0, finished: false)))
        _ = readOnly.update(.frame(clock: 1, pageSize: 10, playback: nil))
        XCTAssertEqual(readOnly.update(.action(.retry), clock: 1, pageSize: 10), [])
        XCTAssertEqual(readOnly.state.flash, "nothing to retry in a replay")
    }
}
