@testable import RequestMonitor
import RequestOperations
import Synchronization
import XCTest

final class ReplayPlayerTests: XCTestCase {
    /// Events at t = 0, 1, 2, ..., 9.
    let events = (0..<10).map { RequestEvent(time: Double($0), operationID: "op-\($0)", attempt: 1, payload: .started) }

    final class Sink: Sendable {
        let received = Mutex<[String]>([])
        var output: @Sendable (ReplayPlayer.ReplayOutput) -> Void {
            { output in
                switch output {
                case .events(let events): self.received.withLock { $0 += events.map(\.operationID) }
                case .reset: self.received.withLock { $0.append("reset") }
                }
            }
        }
        var all: [String] { received.withLock { $0 } }
    }

    private let second: UInt64 = 1_000_000_000

    func testEventsComeOutOnTheirTimelineAtTheChosenSpeed() {
        let sink = Sink()
        let player = ReplayPlayer(events: events, speed: 2, output: sink.output)
        let start = DispatchTime.now().uptimeNanoseconds
        player.tick(now: start)
        XCTAssertEqual(sink.all, ["op-0"])
        player.tick(now: start + second)            // 1 s at 2× = t 2
        XCTAssertEqual(sink.all, ["op-0", "op-1", "op-2"])
        XCTAssertEqual(player.playhead, 2, accuracy: 0.01)
        player.setPaused(true)
        player.tick(now: start + 3 * second)        // paused: nothing moves
        XCTAssertEqual(sink.all.count, 3)
        player.setPaused(false)
        player.tick(now: start + 4 * second)        // 1 s more at 2× = t 4
        XCTAssertEqual(sink.all.last, "op-4")
    }

    func testSpeedStaysBetweenAQuarterAndSixteen() {
        let player = ReplayPlayer(events: events, output: { _ in })
        for _ in 0..<10 { player.faster() }
        XCTAssertEqual(player.speed, 16)
        for _ in 0..<10 { player.slower() }
        XCTAssertEqual(player.speed, 0.25)
    }

    /// Before: `--speed 3` was refused; any speed in the range is taken, and + and - go to
    /// the nearest step from there.
    func testAnySpeedInTheRangeIsTakenAndStepsGoFromIt() {
        let player = ReplayPlayer(events: events, speed: 3, output: { _ in })
        XCTAssertEqual(player.speed, 3)
        XCTAssertEqual(player.faster(), 4)
        let slow = ReplayPlayer(events: events, speed: 3, output: { _ in })
        XCTAssertEqual(slow.slower(), 2)
        XCTAssertEqual(ReplayPlayer(events: events, speed: 0.3, output: { _ in }).speed, 0.3)
        XCTAssertEqual(ReplayPlayer.format(0.3), "0.3×")
    }

    /// Before: an hour between two page loads in a browser's HAR took an hour at 1×.
    func testAnIdleHourIsSkippedAndSaidSo() {
        let sink = Sink()
        let gap = [RequestEvent(time: 0, operationID: "page-1", attempt: 1, payload: .started),
                   RequestEvent(time: 3600, operationID: "page-2", attempt: 1, payload: .started)]
        let player = ReplayPlayer(events: gap, output: sink.output)
        let start = DispatchTime.now().uptimeNanoseconds
        player.tick(now: start)
        XCTAssertEqual(sink.all, ["page-1"])
        XCTAssertEqual(player.playhead, 3599, accuracy: 0.01, "on to a second before the next event")
        player.tick(now: start + 2 * second)
        XCTAssertEqual(sink.all, ["page-1", "page-2"])
        XCTAssertEqual(player.skipped, 3599, accuracy: 0.01)
        XCTAssert(ReplayCommands(player: player).status().text.hasSuffix("(59m59s idle skipped)"), ReplayCommands(player: player).status().text)
        // Gaps of a few seconds are played as they were.
        let short = ReplayPlayer(events: events, output: { _ in })
        short.tick(now: start)
        XCTAssertEqual(short.skipped, 0)
    }

    /// Seeking by time: forward hands over what fell due; back starts the screen over and
    /// replays up to the new time, so it shows the queue as it was then.
    func testSeekingForwardAndBackByTime() {
        let sink = Sink()
        let player = ReplayPlayer(events: events, output: sink.output)
        player.seek(to: 4.5)
        XCTAssertEqual(sink.all, ["op-0", "op-1", "op-2", "op-3", "op-4"])
        XCTAssertEqual(player.playhead, 4.5)
        let commands = ReplayCommands(player: player)
        XCTAssertEqual(commands.perform(.playback(.seek(-10))).message, "at 0.0s")
        XCTAssertEqual(sink.all.suffix(2), ["reset", "op-0"])
        XCTAssertEqual(commands.perform(.playback(.seek(60))).message, "at 9.0s", "never past the end")
        XCTAssertTrue(player.isAtEnd)
    }

    func testStepJumpToEndAndBackToStart() {
        let sink = Sink()
        let player = ReplayPlayer(events: events, output: sink.output)
        XCTAssertEqual(player.step()?.operationID, "op-0")
        XCTAssertTrue(player.isPaused)
        XCTAssertEqual(player.step()?.operationID, "op-1")
        player.jumpToEnd()
        XCTAssertEqual(sink.all, events.map(\.operationID))
        XCTAssertTrue(player.isAtEnd)
        XCTAssertNil(player.step())
        player.jumpToStart()
        XCTAssertEqual(sink.all.last, "reset")
        XCTAssertEqual(player.playhead, 0)
        XCTAssertFalse(player.isAtEnd)
    }

    func testTheReplayCommandsSteerThePlayerAndRefuseToCancel() {
        let player = ReplayPlayer(events: events, output: { _ in })
        let commands = ReplayCommands(player: player)
        XCTAssertFalse(commands.canCancel)
        XCTAssertEqual(commands.perform(.playback(.faster)).message, "speed 2×")
        XCTAssertEqual(commands.perform(.queue(.setSuspended(true))).message, "replay paused")
        XCTAssertEqual(commands.status().text, "REPLAY 2× PAUSED 0.0/9.0s")
        var state = MonitorState()
        state.selectedID = "op-1"
        let context = MonitorUpdate.Context(visible: ["op-1"], pageSize: 5, model: QueueModel(source: "r"), canCommand: true,
                                            canCancel: commands.canCancel)
        XCTAssertEqual(MonitorUpdate.update(&state, .cancel, context), [])
        XCTAssertNil(state.confirmation)
    }
}
