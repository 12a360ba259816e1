import Foundation
@testable import RequestMonitor
import RequestOperations
import XCTest

/// `=` on one operation, then on another: both side by side, differences marked.
final class CompareViewTests: XCTestCase {
    private func events(_ id: String, at t: TimeInterval, trace: String, status: Int, body: String) -> [RequestEvent] {
        [
            RequestEvent(time: t, operationID: id, attempt: 1, payload: .queued(method: "GET", url: "http://h/flaky", headers: ["X-Trace": trace, "Accept": "*/*"], maxAttempts: 1)),
            RequestEvent(time: t, operationID: id, attempt: 1, payload: .started),
            RequestEvent(time: t, operationID: id, attempt: 1, payload: .response(status: status, headers: ["Content-Type": "application/json"], expectedBytes: nil)),
            RequestEvent(time: t, operationID: id, attempt: 1, payload: .responseBody(body: .bytes(Data(body.utf8)), totalBytes: body.utf8.count, truncated: false,
                                                                                      mediaType: "application/json")),
            RequestEvent(time: t + 0.1, operationID: id, attempt: 1, payload: .finished(outcome: status < 400 ? .success : .failure, status: status, attempts: 1,
                                                                                     duration: 0.1, reason: nil)),
        ]
    }

    func testTwoRunsSideBySideWithTheirDifferencesMarked() {
        var model = QueueModel(source: "test")
        model.apply(events("w1-flaky", at: 0, trace: "t-1", status: 503, body: #"{"ok":false,"left":3}"#))
        model.apply(events("w1-flaky~2", at: 1, trace: "t-2", status: 200, body: #"{"ok":true,"left":3}"#))
        var state = MonitorState()
        let visible = { VisibleRows.compute(model, filter: "", sort: .arrival, now: 5).map { model.rows[$0].id } }
        state.selectedID = "w1-flaky"
        var effects = MonitorUpdate.update(&state, .compare, MonitorUpdate.Context(visible: visible(), pageSize: 20, model: model, canCommand: true, canCancel: true))
        XCTAssertEqual(effects, [])
        XCTAssertEqual(state.flash, "marked w1-flaky: = on another operation compares the two")
        state.selectedID = "w1-flaky~2"
        effects = MonitorUpdate.update(&state, .compare, MonitorUpdate.Context(visible: visible(), pageSize: 20, model: model, canCommand: true, canCancel: true))
        XCTAssertEqual(state.screen, .compare(left: "w1-flaky", right: "w1-flaky~2"))

        let lines = MonitorView.compareLines(model.row("w1-flaky")!.expanded(), model.row("w1-flaky~2")!.expanded())
        XCTAssertEqual(lines.filter(\.differs).map(\.left), ["X-Trace: t-1", "status 503 · failed · 1 attempt", #"  "ok": false,"#])
        XCTAssertFalse(lines.contains { $0.left == "Accept: */*" && $0.differs }, "the same header is not marked")

        let text = MonitorView(model: model, state: state, visible: VisibleRows.compute(model, filter: "", sort: .arrival, now: 5), theme: Theme(color: false), now: 5)
            .render(width: 120, height: 30).text
        XCTAssertTrue(text.contains("3 lines differ"), text)
        XCTAssertTrue(text.contains("X-Trace: t-1") && text.contains("≠ X-Trace: t-2"), text)
        XCTAssertTrue(text.contains(#""left": 3"#), text)
    }
}
