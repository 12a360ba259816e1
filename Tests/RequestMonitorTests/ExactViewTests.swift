import Foundation
@testable import RequestMonitor
import RequestOperations
import XCTest

/// What the monitor shows is what happened (#42): compare is a line diff, the help scrolls,
/// the Breakpoints screen's bar shows its own keys, and the table marks injected attempts.
final class ExactViewTests: XCTestCase {
    func testOneInsertedLineIsOneMarkedLine() {
        let left = (1...9).map { "line \($0)" }
        var right = left
        right.insert("inserted", at: 3)
        let rows = LineDiff.rows(left, right)
        XCTAssertEqual(rows.filter { if case .same = $0 { false } else { true } }, [.onlyRight("inserted")])
        XCTAssertEqual(LineDiff.rows(["a", "b", "c"], ["a", "x", "c"]), [.same("a"), .changed("b", "x"), .same("c")])
        XCTAssertEqual(LineDiff.rows(["a", "b"], []), [.onlyLeft("a"), .onlyLeft("b")])
        XCTAssertEqual(LineDiff.rows([], []), [])
        // The shortest script, as diff finds it: one removal and one addition.
        let a = ["x", "a", "b", "c", "y"], b = ["a", "b", "c", "z"]
        let edits = LineDiff.editScript(a, b)!.filter { if case .keep = $0 { false } else { true } }
        XCTAssertEqual(edits.count, 3, "\(edits)")
    }

    func testCompareMarksAnInsertedHeaderAndBodyLineOnce() {
        var model = QueueModel(source: "test")
        func events(_ id: String, _ headers: [String: String], _ body: String) -> [RequestEvent] {
            [RequestEvent(time: 0, operationID: id, attempt: 1, payload: .queued(method: "GET", url: "http://h/x", headers: headers, maxAttempts: 1)),
             RequestEvent(time: 0.1, operationID: id, attempt: 1, payload: .response(status: 200, headers: ["Content-Type": "application/json"], expectedBytes: nil)),
             RequestEvent(time: 0.1, operationID: id, attempt: 1, payload: .responseBody(body: .bytes(Data(body.utf8)), totalBytes: body.utf8.count, truncated: false,
                                                                                       mediaType: "application/json")),
             RequestEvent(time: 0.2, operationID: id, attempt: 1, payload: .finished(outcome: .success, status: 200, attempts: 1, duration: 0.2, reason: nil))]
        }
        model.apply(events("a", ["A": "1", "C": "3"], #"{"a":1,"c":3,"d":4,"e":5}"#))
        model.apply(events("b", ["A": "1", "B": "2", "C": "3"], #"{"a":1,"b":2,"c":3,"d":4,"e":5}"#))
        let lines = MonitorView.compareLines(model.row("a")!.expanded(), model.row("b")!.expanded())
        XCTAssertEqual(lines.filter(\.differs).map(\.right), ["B: 2", #"  "b": 2,"#], "one line each, not every line after")
        XCTAssertEqual(lines.filter(\.differs).map(\.mark), [">", ">"])
    }

    func testTheHelpScrollsWhereItDoesNotFit() {
        var state = MonitorState()
        let context = MonitorUpdate.Context(visible: [], pageSize: 10, model: QueueModel(source: "t"), canCommand: true, canCancel: true)
        _ = MonitorUpdate.update(&state, .toggleHelp, context)
        let small = { MonitorView(model: QueueModel(source: "t"), state: state, visible: [], theme: Theme(color: false), now: 0).render(width: 100, height: 16).text }
        let first = small()
        XCTAssert(first.contains("↑↓ PgUp PgDn scroll"), first)
        let last = KeyMap.helpLines.last!.help
        XCTAssertFalse(first.contains(last), "the last key is below the fold at first")
        for _ in 0..<KeyMap.helpLines.count { _ = MonitorUpdate.update(&state, .down, context) }
        XCTAssert(small().contains(last), "scrolled to it: \(small())")
        XCTAssertEqual(state.selectedID, nil, "the keys moved the help, not the table")
    }

    func testTheBreakpointsScreenShowsItsOwnKeys() {
        var state = MonitorState()
        state.screen = .breakpoints
        let text = MonitorView(model: QueueModel(source: "t"), state: state, visible: [], theme: Theme(color: false), now: 0).render(width: 120, height: 20).text
        let bar = text.split(separator: "\n").last.map(String.init) ?? ""
        XCTAssert(bar.contains("EnterOn/Off") && bar.contains("dRemove") && !bar.contains("Detail"), bar)
    }

    func testTheTableMarksAnInjectedAttempt() {
        var model = QueueModel(source: "test")
        model.apply([RequestEvent(time: 0, operationID: "a", attempt: 1, payload: .queued(method: "GET", url: "http://h/x", headers: [:], maxAttempts: 1)),
                     RequestEvent(time: 0, operationID: "a", attempt: 1, payload: .injected(fault: "status 503", rule: "host:h", by: "monitor")),
                     RequestEvent(time: 0, operationID: "a", attempt: 1, payload: .response(status: 503, headers: [:], expectedBytes: 0)),
                     RequestEvent(time: 0.1, operationID: "a", attempt: 1, payload: .finished(outcome: .failure, status: 503, attempts: 1, duration: 0.1, reason: nil)),
                     RequestEvent(time: 0, operationID: "b", attempt: 1, payload: .queued(method: "GET", url: "http://h/y", headers: [:], maxAttempts: 1)),
                     RequestEvent(time: 0.1, operationID: "b", attempt: 1, payload: .finished(outcome: .failure, status: 503, attempts: 1, duration: 0.1, reason: nil))])
        model.apply([])
        let visible = VisibleRows.compute(model, filter: "", sort: .arrival, now: 1)
        let text = MonitorView(model: model, state: MonitorState(), visible: visible, theme: Theme(color: false), now: 1).render(width: 140, height: 20).text
        let rows = text.split(separator: "\n").map(String.init)
        XCTAssert(rows.contains { $0.contains(" a ") && $0.contains("503!") }, text)
        XCTAssert(rows.contains { $0.contains(" b ") && $0.contains("503") && !$0.contains("503!") }, text)
    }

    func testAnAnswerGivenAtABreakpointIsWhatEveryTabShowsAndTheServersIsNamed() {
        var model = QueueModel(source: "test")
        let mock = Data(#"{"ok":true}"#.utf8)
        model.apply([
            RequestEvent(time: 0, operationID: "a", attempt: 1, payload: .queued(method: "GET", url: "http://h/status/404", headers: [:], maxAttempts: 1)),
            RequestEvent(time: 0.1, operationID: "a", attempt: 1, payload: .started),
            RequestEvent(time: 0.1, operationID: "a", attempt: 1, payload: .response(status: 404, headers: ["Content-Type": "text/plain"], expectedBytes: 10)),
            RequestEvent(time: 0.1, operationID: "a", attempt: 1, payload: .data(bytes: 10)),
            RequestEvent(time: 0.1, operationID: "a", attempt: 1, payload: .responseBody(body: .bytes(Data("not found\n".utf8)), totalBytes: 10, truncated: false, mediaType: "text/plain")),
            RequestEvent(time: 0.1, operationID: "a", attempt: 1, payload: .taskCompleted(error: nil)),
            RequestEvent(time: 0.1, operationID: "a", attempt: 1, payload: .breakpoint(id: 1, rule: "path:/status/404", by: "monitor", afterResponse: true)),
            RequestEvent(time: 2, operationID: "a", attempt: 1, payload: .breakpointResolved(how: "answered 200 by hand", by: "monitor")),
            RequestEvent(time: 2, operationID: "a", attempt: 1, payload: .injected(fault: "answer 200 (11 bytes) instead of the server's", rule: "", by: "breakpoint (monitor)")),
            RequestEvent(time: 2, operationID: "a", attempt: 1, payload: .response(status: 200, headers: ["Content-Type": "application/json"], expectedBytes: 11)),
            RequestEvent(time: 2, operationID: "a", attempt: 1, payload: .data(bytes: 11)),
            RequestEvent(time: 2, operationID: "a", attempt: 1, payload: .responseBody(body: .bytes(mock), totalBytes: 11, truncated: false, mediaType: "application/json")),
            RequestEvent(time: 2, operationID: "a", attempt: 1, payload: .finished(outcome: .success, status: 200, attempts: 1, duration: 2, reason: nil)),
        ])
        let row = model.row("a")!.expanded()
        XCTAssertEqual(row.responseBody?.data, mock)
        XCTAssertEqual(row.bytes, 11)
        XCTAssertEqual(row.replacedAnswer, OperationRow.ReplacedAnswer(attempt: 1, status: 404))
        var state = MonitorState()
        state.screen = .detail(id: "a", tab: .response)
        let render = { MonitorView(model: model, state: state, visible: [], theme: Theme(color: false), now: 3).render(width: 160, height: 24).text }
        let response = render()
        XCTAssert(response.contains("status 200") && response.contains("11B received of 11B"), response)
        XCTAssert(response.contains("in place of the server's 404"), response)
        state.screen = .detail(id: "a", tab: .body)
        let body = render()
        XCTAssert(body.contains(#""ok": true"#) && !body.contains("not found"), body)
        XCTAssert(body.contains("given at a breakpoint in place of the server's 404"), body)
    }

    func testCompareTakesTheRowShownWhenTheFilterHidesTheSelection() {
        var model = QueueModel(source: "test")
        for id in ["a", "b"] {
            model.apply([RequestEvent(time: 0, operationID: id, attempt: 1, payload: .queued(method: "GET", url: "http://h/\(id)", headers: [:], maxAttempts: 1))])
        }
        var state = MonitorState()
        state.selectedID = "a"
        // The filter shows only b; a stays selected but hidden.
        _ = MonitorUpdate.update(&state, .compare, MonitorUpdate.Context(visible: ["b"], pageSize: 20, model: model, canCommand: true, canCancel: true))
        XCTAssertEqual(state.compareMark, "b", "the row the person sees")
        XCTAssertEqual(state.selectedID, "b")
    }
}
