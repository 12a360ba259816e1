import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestMonitor
import RequestOperations
import Synchronization
import XCTest

/// Answers commands the way a queue would, by words, and records what was asked.
/// No queue is involved: the update only returns effects.
struct Answerer {
    var canCancel = true
    var refusePause = false
    /// A program attached read-only.
    var readOnly = false

    func answer(_ command: MonitorCommand) -> CommandAnswer {
        switch command {
        case .queue(.retry(let id)): CommandAnswer("retrying \(id)")
        case .queue(.cancel(let id)): CommandAnswer("cancelled \(id)")
        case .queue(.cancelAll): CommandAnswer("cancelled all")
        case .queue(.setSuspended(let suspended)):
            refusePause ? CommandAnswer(ok: false, "refused") : CommandAnswer(suspended ? "paused" : "resumed")
        case .queue(.releaseBatches): CommandAnswer("released")
        case .queue(.isolate(let host)): CommandAnswer("isolated \(host)")
        case .queue(.closeCircuit(let host)): CommandAnswer("closed \(host)")
        case .playback: CommandAnswer("speed")
        case .queue(.resend(let id, _)): CommandAnswer("sent the edited \(id) as \(id)~edit1")
        case .queue(.toggleFault(let host)): CommandAnswer("injecting into \(host)")
        case .queue(.clearFaults): CommandAnswer("cleared")
        case .queue(.addBreakpoint(let match)): CommandAnswer("breakpoint on \(match)")
        case .queue(.clearBreakpoints): CommandAnswer("breakpoints removed")
        case .queue(.resolveBreakpoint(let id, let how)): CommandAnswer("\(id): \(how.summary)")
        case .queue(.setBreakpointEnabled(let id, let enabled)): CommandAnswer("breakpoint \(id) \(enabled)")
        case .queue(.removeBreakpoint(let id)): CommandAnswer("removed \(id)")
        }
    }
}

final class MonitorUpdateTests: XCTestCase {
    let model = scriptedModel()
    var visible: [String] { model.rows.map(\.id) }
    /// The commands the update asked for, in order.
    var asked: [MonitorCommand] = []

    /// Presses `keys`; each command the update returns is recorded and its answer fed back
    /// as the screen would. `answerer` nil: nothing can be commanded (a replay file alone).
    func press(_ keys: [KeyMap.Key], _ state: inout MonitorState, _ answerer: Answerer?) {
        for key in keys {
            guard let action = KeyMap.action(for: key, in: state) else { continue }
            let context = MonitorUpdate.Context(visible: visible, pageSize: 3, model: model, canCommand: answerer != nil,
                                                canCancel: answerer?.canCancel ?? false, readOnly: answerer?.readOnly ?? false)
            for case .command(let command) in MonitorUpdate.update(&state, action, context) {
                asked.append(command)
                _ = MonitorUpdate.update(&state, .answered(command, answerer!.answer(command)), context)
            }
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
        let commands = Answerer()
        var state = MonitorState()
        state.selectedID = "download"
        press([.character("X")], &state, commands)
        XCTAssertEqual(state.confirmation, .cancel(id: "download"))
        press([.character("j")], &state, commands)
        XCTAssertEqual(state.selectedID, "download", "other keys wait while a question is open")
        press([.character("n")], &state, commands)
        XCTAssertNil(state.confirmation)
        XCTAssertEqual(asked, [])
        press([.character("X"), .character("y")], &state, commands)
        XCTAssertEqual(asked, [.queue(.cancel(operation: "download"))])
        XCTAssertEqual(state.flash, "cancelled download")
        press([.character("C"), .character("y")], &state, commands)
        XCTAssertEqual(asked.last, .queue(.cancelAll))
    }

    /// A program attached read-only says so at the key: no question whose yes it would refuse.
    func testAReadOnlyProgramIsSaidAtTheKeyNotAfterTheQuestion() {
        var state = MonitorState()
        state.selectedID = "download"
        for key in ["X", "C", "e"] {
            state.flash = nil
            press([.character(Character(key))], &state, Answerer(readOnly: true))
            XCTAssertNil(state.confirmation, key)
            XCTAssertEqual(state.flash, "read-only: the program takes no commands from this monitor", key)
        }
        XCTAssertEqual(asked, [])
    }

    func testAFinishedOperationIsNotOfferedForCancelling() {
        var state = MonitorState()
        state.selectedID = "ok-one"
        press([.character("X")], &state, Answerer())
        XCTAssertNil(state.confirmation)
        XCTAssertEqual(state.flash, "ok-one has already succeeded")
    }

    func testRetryPauseAndTheDetailView() {
        let commands = Answerer()
        var state = MonitorState()
        state.selectedID = "flaky"
        press([.character("r"), .character("p"), .character(" ")], &state, commands)
        XCTAssertEqual(asked, [.queue(.retry(operation: "flaky")), .queue(.setSuspended(true)), .queue(.setSuspended(false))])
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

    /// Found using it: with FOLLOW on, the newest row was selected; a filter that hid it,
    /// then Enter, opened the hidden row instead of the one shown.
    func testEnterOpensAShownRowWhenTheFilterHidTheSelection() {
        var state = MonitorState()
        state.selectedID = "not-shown"
        let context = MonitorUpdate.Context(visible: ["flaky"], pageSize: 3, model: model, canCommand: true, canCancel: true)
        _ = MonitorUpdate.update(&state, .open, context)
        XCTAssertEqual(state.screen, .detail(id: "flaky", tab: .events))
        XCTAssertEqual(state.selectedID, "flaky")
    }

    func testTheUpdateReturnsCommandsAndPerformsNone() {
        var state = MonitorState()
        state.selectedID = "flaky"
        let context = MonitorUpdate.Context(visible: visible, pageSize: 3, model: model, canCommand: true, canCancel: true)
        XCTAssertEqual(MonitorUpdate.update(&state, .retry, context), [.command(.queue(.retry(operation: "flaky")))])
        XCTAssertNil(state.flash, "no answer yet: the screen shows it when it comes")
        XCTAssertEqual(MonitorUpdate.update(&state, .answered(.queue(.retry(operation: "flaky")), CommandAnswer("retrying flaky now")), context), [])
        XCTAssertEqual(state.flash, "retrying flaky now")
    }

    /// `:` in a replay: type a time, Enter goes there (the seek is a command for the player).
    func testGoingToATypedTime() {
        var state = MonitorState()
        let context = MonitorUpdate.Context(visible: visible, pageSize: 3, model: model, canCommand: true, canCancel: false)
        func type(_ keys: [KeyMap.Key]) -> [MonitorEffect] {
            var effects: [MonitorEffect] = []
            for key in keys {
                guard let action = KeyMap.action(for: key, in: state) else { continue }
                effects += MonitorUpdate.update(&state, action, context)
            }
            return effects
        }
        XCTAssertEqual(type([.character(":"), .character("1"), .character(":"), .character("3"), .character("0"), .enter]),
                       [.command(.playback(.seekTo(90)))])
        XCTAssertNil(state.timeDraft)
        XCTAssertEqual(type([.character(":"), .character("q"), .enter]), [], "q is typed into the prompt, not quit")
        XCTAssertFalse(state.quit)
        XCTAssertEqual(state.flash, #"not a time: "q" (90, 90.5, 1:30, 1:02:03, 1m30s, 2h)"#)
        for (typed, seconds) in [("90", 90.0), ("90.5", 90.5), ("1:02:03", 3723), ("1m30s", 90), ("2h", 7200), ("45s", 45)] {
            XCTAssertEqual(MonitorUpdate.sessionTime(typed), seconds, typed)
        }
        for bad in ["", "1:2:3:4", "m", "1x", "-5", "1e99"] {
            XCTAssertNil(MonitorUpdate.sessionTime(bad), bad)
        }
    }

    func testAnAnswerToAnOlderCommandDoesNotCoverANewerMessage() {
        var state = MonitorState()
        state.selectedID = "download"
        let context = MonitorUpdate.Context(visible: visible, pageSize: 3, model: model, canCommand: true, canCancel: false)
        XCTAssertEqual(MonitorUpdate.update(&state, .playback(.faster), context), [.command(.playback(.faster))])
        XCTAssertEqual(MonitorUpdate.update(&state, .cancel, context), [])
        XCTAssertEqual(state.flash, "nothing to cancel in a replay")
        _ = MonitorUpdate.update(&state, .answered(.playback(.faster), CommandAnswer("speed 2×")), context)
        XCTAssertEqual(state.flash, "nothing to cancel in a replay", "the answer to + came after X's own message")
        _ = MonitorUpdate.update(&state, .playback(.faster), context)
        _ = MonitorUpdate.update(&state, .answered(.playback(.faster), CommandAnswer("speed 4×")), context)
        XCTAssertEqual(state.flash, "speed 4×")
    }

    func testARefusedPauseIsUndone() {
        var state = MonitorState()
        press([.character("p")], &state, Answerer(refusePause: true))
        XCTAssertFalse(state.paused, "the queue did not pause, so the monitor does not show it paused")
        XCTAssertEqual(state.flash, "refused")
        let context = MonitorUpdate.Context(visible: visible, pageSize: 3, model: model, canCommand: true, canCancel: true)
        _ = MonitorUpdate.update(&state, .pausedElsewhere(true), context)
        XCTAssertTrue(state.paused, "another monitor paused the program")
    }

    /// On the Hosts screen j/k choose a host and i/c isolate it or close its breaker, by the
    /// key the breaker knows it by (the port always written); elsewhere they only say how.
    func testIsolatingAndClosingTheSelectedHost() {
        var state = MonitorState()
        press([.character("i")], &state, Answerer())
        XCTAssertEqual(state.flash, "open the Hosts screen (H) and choose a host first")
        let hosts = HostSummary.compute(model)
        press([.character("H"), .character("j")], &state, Answerer())
        XCTAssertEqual(state.screen, .hosts)
        XCTAssertEqual(state.selectedHost, hosts[min(1, hosts.count - 1)].host)
        press([.character("i")], &state, Answerer())
        let key = hosts.first { $0.host == state.selectedHost }!.circuitHost!
        XCTAssertTrue(key.contains(":"), key)
        XCTAssertEqual(asked.last, .queue(.isolate(host: key)))
        XCTAssertEqual(state.flash, "isolated \(key)")
        press([.character("c")], &state, Answerer())
        XCTAssertEqual(asked.last, .queue(.closeCircuit(host: key)))
        // r and X act on operations, which this screen does not show: they only say so.
        let before = asked.count
        press([.character("X"), .character("r")], &state, Answerer())
        XCTAssertEqual(asked.count, before)
        XCTAssertNil(state.confirmation, "no question about an operation the person cannot see")
        XCTAssertEqual(state.flash, "r and X act on an operation: Esc goes back to the table")
        press([.character("G")], &state, Answerer())
        XCTAssertEqual(state.selectedHost, hosts.last?.host, "G goes to the last host, never past it")
        let grid = MonitorView(model: model, state: state, visible: [], theme: Theme(), now: 10).render(width: 120, height: 20)
        XCTAssert(grid.text.contains("iIsolate") || grid.text.contains("i Isolate"), grid.text)
    }
}

final class KeyTableTests: XCTestCase {
    func testTheFunctionBarComesFromTheKeyTable() {
        XCTAssertEqual(KeyMap.barHints(detail: false, paused: false, held: false).map(\.key), ["Enter", "H", "r", "X", "C", "p", "B", "/", "o", "F", "?", "q"])
        XCTAssertEqual(KeyMap.barHints(detail: false, paused: true, held: true).map(\.label),
                       ["Detail", "Hosts", "Retry", "Cancel", "CancelAll", "Resume", "Break", "Release", "Filter", "Sort", "Follow", "Help", "Quit"])
        XCTAssertEqual(KeyMap.barHints(detail: false, paused: false, held: false, hosts: true).map(\.key), ["H", "i", "c", "!", "Esc", "p", "?", "q"])
        // A merged view's Hosts screen offers P (it was missing from the bar).
        XCTAssertEqual(KeyMap.barHints(detail: false, paused: false, held: false, hosts: true, merged: true).map(\.key),
                       ["H", "i", "c", "!", "P", "Esc", "p", "?", "q"])
        XCTAssertEqual(KeyMap.barHints(detail: true, paused: false, held: true).map(\.key), ["Tab", "Esc", "r", "X", "p", "y", "e", "=", "?", "q"])
        for hint in KeyMap.barHints(detail: false, paused: false, held: true) {
            XCTAssertTrue(KeyMap.bindings.contains { $0.bar?.key == hint.key && $0.help.isEmpty == false }, "\(hint.key) is documented")
        }
    }

    func testTheReadmeShowsTheKeyTable() throws {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/monitor.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        XCTAssertTrue(text.contains(KeyMap.markdownTable), "docs/monitor.md's key table must be KeyMap.markdownTable:\n\(KeyMap.markdownTable)")
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
    /// Commands find operations through the queue (running, or among its recent ones): the
    /// adapter keeps none of its own, so a monitor left open for days holds nothing extra.
    func testOperationsAreFoundThroughTheQueueByID() {
        let queue = RequestQueue(earlyRetry: nil)
        let commands = LiveQueueCommands(queue: queue)
        let refused = queue.add(URLRequest(url: URL(string: "http://127.0.0.1:1/")!), id: "refused",
                                options: RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy.never))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(refused.result?.outcome, .failure)
        let answer = commands.perform(.queue(.retry(operation: "refused")))
        XCTAssertTrue(answer.ok, answer.message)
        XCTAssertNotNil(queue.operation(withID: "refused~2"), "run again as refused~2")
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertFalse(commands.perform(.queue(.retry(operation: "never-added"))).ok)
    }

    func testReleaseBatchesLetsHeldRequestsGoAndSaysHowMany() {
        let queue = RequestQueue(earlyRetry: nil)
        let commands = LiveQueueCommands(queue: queue)
        XCTAssertEqual(commands.perform(.queue(.releaseBatches)).message, "no batch holds a request")
        let batch = RequestBatch(name: "uploads", size: 5)
        // Port 1 refuses at once: what matters is that the request leaves the batch.
        let operation = queue.add(URLRequest(url: URL(string: "http://127.0.0.1:1/")!),
                                  options: RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy.never,
                                                          interceptors: [BatchingInterceptor(batch: batch)]))
        let deadline = Date().addingTimeInterval(5)
        while batch.heldCount == 0, Date() < deadline { usleep(5_000) }
        XCTAssertEqual(operation.phase, .held(batch: "uploads"))
        XCTAssertEqual(commands.perform(.queue(.releaseBatches)).message, "released 1 from uploads")
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(batch.releasedCount, 1)
        XCTAssertEqual(operation.result?.error?.stage, .transport)
    }

    func testLiveCommandsIsolateAndCloseTheQueuesBreaker() {
        let queue = RequestQueue(earlyRetry: nil)
        let commands = LiveQueueCommands(queue: queue)
        XCTAssertEqual(commands.perform(.queue(.isolate(host: "127.0.0.1:1"))).message, "isolated 127.0.0.1:1: nothing is sent to it until its circuit is closed (c)")
        XCTAssertEqual(queue.environment.circuitBreaker?.states()["127.0.0.1:1"], .open(until: nil, reason: "isolated by monitor"))
        XCTAssertTrue(commands.perform(.queue(.closeCircuit(host: "127.0.0.1:1"))).ok)
        XCTAssertFalse(commands.perform(.queue(.closeCircuit(host: "127.0.0.1:1"))).ok, "closed already")
        XCTAssertEqual(LiveQueueCommands(queue: RequestQueue(earlyRetry: nil, circuitBreaker: nil)).perform(.queue(.isolate(host: "a:80"))).message,
                       "this queue has no circuit breakers")
    }
}
