import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestMonitor
import RequestOperations
import Synchronization
import XCTest

/// Records what the monitor asked of the queue.
final class RecordingCommands: QueueCommands {
    let calls = Mutex<[String]>([])

    func retry(_ id: String) -> String { calls.withLock { $0.append("retry \(id)") }; return "retrying \(id)" }
    func cancel(_ id: String) -> String { calls.withLock { $0.append("cancel \(id)") }; return "cancelled \(id)" }
    func cancelAll() -> String { calls.withLock { $0.append("cancelAll") }; return "cancelled all" }
    func setSuspended(_ suspended: Bool) -> String {
        calls.withLock { $0.append("suspended \(suspended)") }
        return suspended ? "paused" : "resumed"
    }
}

final class MonitorUpdateTests: XCTestCase {
    let model = scriptedModel()
    var visible: [String] { model.rows.map(\.id) }

    func press(_ keys: [KeyMap.Key], _ state: inout MonitorState, _ commands: QueueCommands?) {
        for key in keys {
            guard let action = KeyMap.action(for: key, in: state) else { continue }
            MonitorUpdate.apply(action, to: &state, visible: visible, pageSize: 3, model: model, commands: commands)
        }
    }

    func testMovingTheSelectionStopsFollowing() {
        var state = MonitorState()
        press([.character("g")], &state, nil)
        XCTAssertEqual(state.selectedID, "ok-one")
        XCTAssertFalse(state.follow)
        press([.character("j"), .down, .pageDown], &state, nil)
        XCTAssertEqual(state.selectedID, "gone")
        press([.character("k")], &state, nil)
        XCTAssertEqual(state.selectedID, "down")
        press([.character("F")], &state, nil)
        XCTAssertTrue(state.follow)
        XCTAssertEqual(state.selectedID, "later")
    }

    func testCancelAsksFirstAndOnlyYesCancels() {
        let commands = RecordingCommands()
        var state = MonitorState()
        state.selectedID = "download"
        press([.character("X")], &state, commands)
        XCTAssertEqual(state.confirmation, .cancel(id: "download"))
        press([.character("j")], &state, commands)
        XCTAssertEqual(state.selectedID, "download", "other keys wait while a question is open")
        press([.character("n")], &state, commands)
        XCTAssertNil(state.confirmation)
        XCTAssertEqual(commands.calls.withLock { $0 }, [])
        press([.character("X"), .character("y")], &state, commands)
        XCTAssertEqual(commands.calls.withLock { $0 }, ["cancel download"])
        XCTAssertEqual(state.flash, "cancelled download")
        press([.character("C"), .character("y")], &state, commands)
        XCTAssertEqual(commands.calls.withLock { $0 }.last, "cancelAll")
    }

    func testAFinishedOperationIsNotOfferedForCancelling() {
        var state = MonitorState()
        state.selectedID = "ok-one"
        press([.character("X")], &state, RecordingCommands())
        XCTAssertNil(state.confirmation)
        XCTAssertEqual(state.flash, "ok-one has already succeeded")
    }

    func testRetryPauseAndTheDetailView() {
        let commands = RecordingCommands()
        var state = MonitorState()
        state.selectedID = "flaky"
        press([.character("r"), .character("p"), .character(" ")], &state, commands)
        XCTAssertEqual(commands.calls.withLock { $0 }, ["retry flaky", "suspended true", "suspended false"])
        press([.enter, .tab, .tab], &state, commands)
        XCTAssertEqual(state.screen, .detail(id: "flaky", tab: .response))
        press([.backTab], &state, commands)
        XCTAssertEqual(state.screen, .detail(id: "flaky", tab: .request))
        press([.escape], &state, commands)
        XCTAssertEqual(state.screen, .table)
    }

    func testTypingAFilter() {
        var state = MonitorState()
        press([.character("/")] + "state:fx".map { .character($0) } + [.backspace, .character("a"), .enter], &state, nil)
        XCTAssertEqual(state.filter, "state:fa")
        XCTAssertNil(state.filterDraft)
        press([.character("/"), .character("z"), .escape], &state, nil)
        XCTAssertEqual(state.filter, "state:fa", "Esc keeps the filter that was there")
        press([.character("/"), .character("\u{15}"), .enter], &state, nil)
        XCTAssertEqual(state.filter, "", "Ctrl-U clears")
    }

    func testHelpSortAndQuit() {
        var state = MonitorState()
        press([.character("?")], &state, nil)
        XCTAssertTrue(state.showHelp)
        press([.escape], &state, nil)
        XCTAssertFalse(state.showHelp)
        press([.character("o"), .character("o")], &state, nil)
        XCTAssertEqual(state.sort, .duration)
        press([.character("q")], &state, nil)
        XCTAssertTrue(state.quit)
    }

    func testAReplayHasNothingToCommand() {
        var state = MonitorState()
        state.selectedID = "download"
        press([.character("X")], &state, nil)
        XCTAssertNil(state.confirmation)
        XCTAssertEqual(state.flash, "nothing to cancel in a replay")
    }
}

final class QueueModelTests: XCTestCase {
    func testCountsFollowEveryTransition() {
        let model = scriptedModel()
        XCTAssertEqual(model.counts[.succeeded], 1)
        XCTAssertEqual(model.counts[.backoff], 1)
        XCTAssertEqual(model.counts[.running], 1)
        XCTAssertEqual(model.counts[.failed], 1)
        XCTAssertEqual(model.counts[.cancelled], 1)
        XCTAssertEqual(model.counts[.queued], 1)
        XCTAssertEqual(model.counts.values.reduce(0, +), model.rows.count)
    }

    func testTheSameEventsGiveTheSameModelWhateverTheirBatching() {
        let events = scriptedModel().rows.flatMap(\.events).sorted { $0.time < $1.time }
        var oneByOne = QueueModel(source: "x")
        events.forEach { oneByOne.apply($0) }
        var batched = QueueModel(source: "x")
        batched.apply(events)
        XCTAssertEqual(oneByOne.rows, batched.rows)
    }
}

final class LiveQueueCommandsTests: XCTestCase {
    func testReleaseBatchesLetsHeldRequestsGoAndSaysHowMany() {
        let queue = RequestQueue(earlyRetry: nil)
        let commands = LiveQueueCommands(queue: queue)
        XCTAssertEqual(commands.releaseBatches(), "no batch holds a request")
        let batch = RequestBatch(name: "uploads", size: 5)
        // Port 1 refuses at once: what matters is that the request leaves the batch.
        let operation = queue.add(URLRequest(url: URL(string: "http://127.0.0.1:1/")!),
                                  options: RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy.never,
                                                          interceptors: [BatchingInterceptor(batch: batch)]))
        commands.track(operation)
        let deadline = Date().addingTimeInterval(5)
        while batch.heldCount == 0, Date() < deadline { usleep(5_000) }
        XCTAssertEqual(operation.phase, .held(batch: "uploads"))
        XCTAssertEqual(commands.releaseBatches(), "released 1 from uploads")
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(batch.releasedCount, 1)
        XCTAssertEqual(operation.result?.error?.stage, .transport)
    }
}
