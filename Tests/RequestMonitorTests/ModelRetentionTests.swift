@testable import RequestMonitor
import RequestOperations
import XCTest

/// What a monitor keeps when it runs for days: finished rows compacted, the oldest let go.
final class ModelRetentionTests: XCTestCase {
    private func finishedOperation(_ id: String, at t: TimeInterval, chunks: Int = 1, into model: inout QueueModel) {
        model.apply(RequestEvent(time: t, operationID: id, attempt: 1, payload: .queued(method: "GET", url: "http://api.test/\(id)", headers: [:], maxAttempts: 3)))
        model.apply(RequestEvent(time: t, operationID: id, attempt: 1, payload: .started))
        model.apply(RequestEvent(time: t, operationID: id, attempt: 1, payload: .response(status: 200, headers: [:], expectedBytes: nil)))
        for chunk in 0..<chunks {
            model.apply(RequestEvent(time: t + Double(chunk) * 0.001, operationID: id, attempt: 1, payload: .data(bytes: 100)))
        }
        model.apply(RequestEvent(time: t + 0.5, operationID: id, attempt: 1, payload: .finished(outcome: .success, status: 200, attempts: 1, duration: 0.5, reason: nil)))
    }

    func testAFinishedRowKeepsOneDataEventPerRunAndTheEventsTabSaysSo() {
        var model = QueueModel(source: "test")
        finishedOperation("download", at: 1, chunks: 500, into: &model)
        let row = model.row("download")!
        XCTAssertEqual(row.events.map(\.payload.name), ["queued", "started", "response", "data", "finished"])
        XCTAssertEqual(row.events[3].payload, .data(bytes: 50_000), "the run's bytes are kept")
        XCTAssertEqual(row.bytes, 50_000)
        XCTAssertEqual(row.mergedDataEvents, 499)

        var state = MonitorState()
        state.screen = .detail(id: "download", tab: .events)
        let text = MonitorView(model: model, state: state, visible: [0], theme: Theme(), now: 2).render(width: 120, height: 30).text
        XCTAssert(text.contains("499 data events merged"), text)
    }

    /// While it runs too: a download's thousands of `data` events are one growing line, per
    /// attempt (they filled the Events tab of a running 4 GiB download with 16,000 lines).
    func testARunningDownloadsDataEventsAreOneLinePerRunAsTheyCome() {
        var model = QueueModel(source: "test")
        model.apply(RequestEvent(time: 1, operationID: "big", attempt: 1, payload: .queued(method: "GET", url: "http://api.test/big", headers: [:], maxAttempts: 3)))
        model.apply(RequestEvent(time: 1, operationID: "big", attempt: 1, payload: .started))
        model.apply(RequestEvent(time: 1, operationID: "big", attempt: 1, payload: .response(status: 200, headers: [:], expectedBytes: nil)))
        for chunk in 0..<1_000 {
            model.apply(RequestEvent(time: 1 + Double(chunk) * 0.001, operationID: "big", attempt: 1, payload: .data(bytes: 262_144)))
        }
        // A second attempt's bytes are their own line.
        model.apply(RequestEvent(time: 3, operationID: "big", attempt: 2, payload: .started))
        model.apply(RequestEvent(time: 3, operationID: "big", attempt: 2, payload: .data(bytes: 10)))
        model.apply(RequestEvent(time: 3, operationID: "big", attempt: 2, payload: .data(bytes: 20)))
        let row = model.row("big")!
        XCTAssertEqual(row.state, .preparing)
        XCTAssertEqual(row.events.map(\.payload.name), ["queued", "started", "response", "data", "started", "data"])
        XCTAssertEqual(row.events[3].payload, .data(bytes: 262_144_000))
        XCTAssertEqual(row.events[3].time, 1.999, accuracy: 1e-9, "the run's line carries its latest time")
        XCTAssertEqual(row.events[5].payload, .data(bytes: 30))
        XCTAssertEqual(row.mergedDataEvents, 1_000)

        var state = MonitorState()
        state.screen = .detail(id: "big", tab: .events)
        let text = MonitorView(model: model, state: state, visible: [0], theme: Theme(), now: 3).render(width: 120, height: 30).text
        XCTAssert(text.contains("data             250M (262144000 bytes)"), text)
    }

    func testPastTheLimitTheOldestFinishedRowsAreLetGoAndRunningOnesStay() {
        var model = QueueModel(source: "test", finishedLimit: 100)
        model.apply(RequestEvent(time: 0, operationID: "still-running", attempt: 1, payload: .queued(method: "GET", url: "http://api.test/slow", headers: [:], maxAttempts: 3)))
        for index in 0..<1_000 {
            finishedOperation("op-\(index)", at: Double(index), into: &model)
        }
        XCTAssertLessThanOrEqual(model.rows.count, 111, "at most the limit and a tenth, and the running one")
        XCTAssertNotNil(model.row("still-running"), "a running operation is never let go")
        XCTAssertNotNil(model.row("op-999"), "the newest stay")
        XCTAssertNil(model.row("op-0"), "the oldest go")
        XCTAssertEqual(model.counts[.succeeded], 1_000, "the counts stay the session's")
        XCTAssertEqual(model.totalOperations, 1_001)
        XCTAssertEqual(model.rows.count + model.forgotten, 1_001)
        for (position, row) in model.rows.enumerated() {
            XCTAssertEqual(model.index(of: row.id), position)
        }
        // A late event of the running one still finds its row.
        model.apply(RequestEvent(time: 2_000, operationID: "still-running", attempt: 1, payload: .started))
        XCTAssertEqual(model.row("still-running")?.state, .preparing)

        let visible = VisibleRows.compute(model, filter: "", sort: .arrival, now: 2_000)
        let text = MonitorView(model: model, state: MonitorState(), visible: visible, theme: Theme(), now: 2_000).render(width: 200, height: 20).text
        XCTAssert(text.contains("1001 ops (\(model.forgotten) finished let go)"), text)
    }
}
