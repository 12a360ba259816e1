import Foundation
@testable import RequestMonitor
import RequestOperations
import XCTest

/// `B` sets a breakpoint from a match (the filter, prefilled); on an operation stopped at one
/// `s` sends it, `a` answers it, `f` fails it, `e` edits it; the row says `break`.
final class BreakpointKeysTests: XCTestCase {
    private func model(stopped: Bool) -> QueueModel {
        var model = QueueModel(source: "test")
        var events = [
            RequestEvent(time: 0, operationID: "a", attempt: 1, payload: .queued(method: "GET", url: "http://api.test:8080/flaky", headers: [:], maxAttempts: 2)),
        ]
        if stopped { events.append(RequestEvent(time: 0.1, operationID: "a", attempt: 1, payload: .breakpoint(id: 1, rule: "path:/flaky", by: "monitor"))) }
        model.apply(events)
        return model
    }

    private func type(_ text: String, _ state: inout MonitorState, _ context: MonitorUpdate.Context) -> [MonitorEffect] {
        for character in text { _ = MonitorUpdate.update(&state, .promptInput(.character(character)), context) }
        return MonitorUpdate.update(&state, .promptInput(.enter), context)
    }

    func testBSetsABreakpointFromTheFilterAndEmptyRemovesYours() {
        let model = model(stopped: false)
        var state = MonitorState()
        state.filter = "path:/flaky"
        let context = MonitorUpdate.Context(visible: ["a"], pageSize: 20, model: model, canCommand: true, canCancel: true)
        XCTAssertEqual(MonitorUpdate.update(&state, .startBreakpoint, context), [])
        XCTAssertEqual(state.commandPrompt, CommandPrompt(kind: .breakpoint, text: "path:/flaky"))
        XCTAssertEqual(KeyMap.action(for: .character("x"), in: state), .promptInput(.character("x")), "typing goes to the prompt")
        XCTAssertEqual(type(" method:GET", &state, context), [.command(.queue(.addBreakpoint(match: "path:/flaky method:GET")))])
        XCTAssertNil(state.commandPrompt)

        _ = MonitorUpdate.update(&state, .startBreakpoint, context)
        _ = MonitorUpdate.update(&state, .promptInput(.character("\u{15}")), context)
        XCTAssertEqual(type("colour:red", &state, context), [])
        XCTAssert(state.flash?.hasPrefix("not a breakpoint: \"colour:\" is not a term for requests") == true, state.flash ?? "")

        state.filter = ""
        _ = MonitorUpdate.update(&state, .startBreakpoint, context)
        XCTAssertEqual(MonitorUpdate.update(&state, .promptInput(.enter), context), [.command(.queue(.clearBreakpoints))])

        let replay = MonitorUpdate.Context(visible: ["a"], pageSize: 20, model: model, canCommand: true, canCancel: false)
        XCTAssertEqual(MonitorUpdate.update(&state, .startBreakpoint, replay), [])
        XCTAssertEqual(state.flash, "a replay has no breakpoints: it shows what happened")
    }

    func testAStoppedOperationIsSentAnsweredFailedOrEdited() {
        let model = model(stopped: true)
        XCTAssertEqual(model.row("a")?.heldBy, .breakpoint(id: 1, rule: "path:/flaky"))
        XCTAssertEqual(model.row("a")?.heldByShort, "break")
        var state = MonitorState()
        state.selectedID = "a"
        let context = MonitorUpdate.Context(visible: ["a"], pageSize: 20, model: model, canCommand: true, canCancel: true)
        XCTAssertEqual(MonitorUpdate.update(&state, .sendAtBreakpoint, context),
                       [.command(.queue(.resolveBreakpoint(operation: "a", resolution: .proceed)))])
        XCTAssertEqual(MonitorUpdate.update(&state, .failAtBreakpoint, context),
                       [.command(.queue(.resolveBreakpoint(operation: "a", resolution: .fail(.networkConnectionLost))))])
        XCTAssertEqual(MonitorUpdate.update(&state, .startAnswer, context), [])
        XCTAssertEqual(state.commandPrompt?.text, "503")
        _ = MonitorUpdate.update(&state, .promptInput(.backspace), context)
        _ = MonitorUpdate.update(&state, .promptInput(.backspace), context)
        _ = MonitorUpdate.update(&state, .promptInput(.backspace), context)
        XCTAssertEqual(type(#"200 {"ok":true}"#, &state, context), [.command(.queue(.resolveBreakpoint(
            operation: "a", resolution: .respond(status: 200, headers: ["Content-Type": "application/json"], body: Data(#"{"ok":true}"#.utf8)))))])
        _ = MonitorUpdate.update(&state, .startAnswer, context)
        XCTAssertEqual(state.commandPrompt?.suggested, true, "the 503 is a suggestion")
        XCTAssertEqual(type("x", &state, context), [])
        XCTAssertEqual(state.flash, "not a status: \"x\" (a number from 100 to 599, then the body if any)", "typing replaced the suggestion, as selected text")
        _ = MonitorUpdate.update(&state, .startAnswer, context)
        XCTAssertEqual(type(#"200 {"a":1}"#, &state, context).count, 1, "typed over the 503, not after it (\"503200 …\" was refused)")
        guard case .edit(let id, _, atBreakpoint: true)? = MonitorUpdate.update(&state, .editRequest, context).first else {
            return XCTFail("e on a stopped operation edits the attempt itself")
        }
        XCTAssertEqual(id, "a")
        XCTAssertEqual(KeyMap.barHints(detail: true, paused: false, held: true, stopped: true).map(\.key).filter { ["s", "a", "f"].contains($0) },
                       ["s", "a", "f"], "the bar offers them on a stopped operation")
        XCTAssert(KeyMap.barHints(detail: true, paused: false, held: true).allSatisfy { !["s", "a", "f"].contains($0.key) }, "and only there")

        let running = self.model(stopped: false)
        let plain = MonitorUpdate.Context(visible: ["a"], pageSize: 20, model: running, canCommand: true, canCancel: true)
        XCTAssertEqual(MonitorUpdate.update(&state, .sendAtBreakpoint, plain), [])
        XCTAssertEqual(state.flash, "a is not stopped at a breakpoint (B sets one)")
    }
}

/// The Breakpoints screen (`L`): every breakpoint from its events, what each holds; Enter
/// turns one off or on, `d` removes it.
final class BreakpointListTests: XCTestCase {
    func testTheListShowsEachBreakpointAndItsKeysChangeThem() {
        var model = QueueModel(source: "test")
        model.apply([
            RequestEvent(time: 0, operationID: "", attempt: 0, payload: .breakpointSet(id: 1, rule: "path:/flaky", by: "monitor", enabled: true, afterResponse: false)),
            RequestEvent(time: 0, operationID: "", attempt: 0, payload: .breakpointSet(id: 2, rule: "method:POST", by: "library", enabled: true, afterResponse: true)),
            RequestEvent(time: 0.1, operationID: "a", attempt: 1, payload: .queued(method: "GET", url: "http://h:80/flaky", headers: [:], maxAttempts: 2)),
            RequestEvent(time: 0.2, operationID: "a", attempt: 1, payload: .breakpoint(id: 1, rule: "path:/flaky", by: "monitor")),
            RequestEvent(time: 0.3, operationID: "", attempt: 0, payload: .breakpointSet(id: 2, rule: "method:POST", by: "library", enabled: false, afterResponse: true)),
        ])
        XCTAssertEqual(model.breakpoints.keys.sorted(), [1, 2])
        var state = MonitorState()
        let context = MonitorUpdate.Context(visible: ["a"], pageSize: 20, model: model, canCommand: true, canCancel: true)
        XCTAssertEqual(KeyMap.action(for: .character("L"), in: state), .toggleBreakpoints)
        _ = MonitorUpdate.update(&state, .toggleBreakpoints, context)
        XCTAssertEqual(state.screen, .breakpoints)
        let text = MonitorView(model: model, state: state, visible: [0], theme: Theme(), now: 1).render(width: 120, height: 20).text
        let first = text.split(separator: "\n").first { $0.contains("path:/flaky") } ?? ""
        XCTAssert(first.contains("before sending") && first.contains("on") && first.contains("1  monitor"), "\(first)\n\(text)")
        let second = text.split(separator: "\n").first { $0.contains("method:POST") } ?? ""
        XCTAssert(second.contains("after the answer") && second.contains("off"), "\(second)")

        XCTAssertEqual(MonitorUpdate.update(&state, .open, context), [.command(.queue(.setBreakpointEnabled(id: 1, enabled: false)))])
        _ = MonitorUpdate.update(&state, .down, context)
        XCTAssertEqual(state.selectedBreakpoint, 2)
        XCTAssertEqual(MonitorUpdate.update(&state, .open, context), [.command(.queue(.setBreakpointEnabled(id: 2, enabled: true)))])
        XCTAssertEqual(MonitorUpdate.update(&state, .removeBreakpoint, context), [.command(.queue(.removeBreakpoint(id: 2)))])
        _ = MonitorUpdate.update(&state, .back, context)
        XCTAssertEqual(state.screen, .table)
        model.apply([RequestEvent(time: 1, operationID: "", attempt: 0, payload: .breakpointRemoved(id: 2))])
        XCTAssertEqual(model.breakpoints.keys.sorted(), [1])
    }
}
