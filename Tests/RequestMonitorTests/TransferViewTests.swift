import Foundation
@testable import RequestMonitor
import RequestOperations
import XCTest

/// A running download in the detail view: bytes, rate and time left in the header, the file
/// it goes to on the Response tab, the upload's file on the Request tab (#32).
final class TransferViewTests: XCTestCase {
    func testARunningDownloadShowsItsRateTimeLeftAndFile() {
        var options = RecordedOptions(deadline: 60)
        options.saveTo = "/tmp/report.bin"
        options.bodyFile = "/tmp/upload.bin"
        var model = QueueModel(source: "test")
        model.apply([
            RequestEvent(time: 0, operationID: "dl", attempt: 1, payload: .queued(method: "PUT", url: "http://h:80/report", headers: [:], maxAttempts: 1,
                                                                                  options: options)),
            RequestEvent(time: 0, operationID: "dl", attempt: 1, payload: .started),
            RequestEvent(time: 0.1, operationID: "dl", attempt: 1, payload: .taskCreated(taskIdentifier: 1, url: "http://h:80/report")),
            RequestEvent(time: 1, operationID: "dl", attempt: 1, payload: .response(status: 200, headers: [:], expectedBytes: 4 << 20)),
            RequestEvent(time: 2, operationID: "dl", attempt: 1, payload: .data(bytes: 1 << 20)),
        ])
        var state = MonitorState()
        state.selectedID = "dl"
        state.screen = .detail(id: "dl", tab: .response)
        let visible = VisibleRows.compute(model, filter: "", sort: .arrival, now: 2)
        let text = MonitorView(model: model, state: state, visible: visible, theme: Theme(), now: 2).render(width: 160, height: 20).text
        XCTAssert(text.contains("↓ 1.0M of 4.0M · 1.0M/s · 3.0s left"), text)
        XCTAssert(text.contains("saved to /tmp/report.bin"), text)
        state.screen = .detail(id: "dl", tab: .request)
        let request = MonitorView(model: model, state: state, visible: visible, theme: Theme(), now: 2).render(width: 160, height: 20).text
        XCTAssert(request.contains("body from /tmp/upload.bin") && request.contains("answer to /tmp/report.bin"), request)
        XCTAssertNil(model.row("dl")?.transfer(at: 0.5), "nothing before the response")

        // A long URL gives way in the title line, not the transfer after it (at 120 columns
        // the demo's drip download read `↓ 225K of 9`).
        let long = "http://127.0.0.1:33653/drip?bytes=1000000&duration=20000&chunks=100&padding=" + String(repeating: "x", count: 60)
        model.apply([RequestEvent(time: 2, operationID: "long", attempt: 1, payload: .queued(method: "GET", url: long, headers: [:], maxAttempts: 4))]
            + [RequestEvent(time: 2, operationID: "long", attempt: 1, payload: .started),
               RequestEvent(time: 2, operationID: "long", attempt: 1, payload: .taskCreated(taskIdentifier: 2, url: long)),
               RequestEvent(time: 2, operationID: "long", attempt: 1, payload: .response(status: 200, headers: [:], expectedBytes: 1_000_000)),
               RequestEvent(time: 3, operationID: "long", attempt: 1, payload: .data(bytes: 230_000))])
        state.screen = .detail(id: "long", tab: .events)
        let title = MonitorView(model: model, state: state, visible: visible, theme: Theme(), now: 3).render(width: 120, height: 20)
            .text.split(separator: "\n", omittingEmptySubsequences: false)[2]
        XCTAssert(title.contains("↓ 225K of 977K") && title.contains("attempt 1/4") && title.contains("…"), String(title))
    }

    /// A gzip answer's bytes are decoded ones and its length is the wire's: no "of", no time
    /// left (it showed `↓ 40.0M of 1.0M`).
    func testAnEncodedDownloadSaysDecodedAndTheWireSize() {
        var model = QueueModel(source: "test")
        model.apply([
            RequestEvent(time: 0, operationID: "gz", attempt: 1, payload: .queued(method: "GET", url: "http://h:80/logs", headers: [:], maxAttempts: 1)),
            RequestEvent(time: 0, operationID: "gz", attempt: 1, payload: .started),
            RequestEvent(time: 0.1, operationID: "gz", attempt: 1, payload: .taskCreated(taskIdentifier: 1, url: "http://h:80/logs")),
            RequestEvent(time: 1, operationID: "gz", attempt: 1, payload: .response(status: 200, headers: ["content-encoding": "gzip"], expectedBytes: 1 << 20)),
            RequestEvent(time: 2, operationID: "gz", attempt: 1, payload: .data(bytes: 8 << 20)),
        ])
        let transfer = model.row("gz")?.transfer(at: 2)
        XCTAssertEqual(transfer?.text, "↓ 8.0M decoded · gzip, 1.0M on the wire · 8.0M/s")
        XCTAssertNil(transfer?.left)
    }

    /// A body going up before any answer: `↑` with its rate and time left, on the Request tab
    /// and in the header (a 50 MB upload showed only `running`).
    func testARunningUploadShowsItsProgressUntilTheAnswerBegins() throws {
        var model = QueueModel(source: "test")
        model.apply([
            RequestEvent(time: 0, operationID: "up", attempt: 1, payload: .queued(method: "PUT", url: "http://h:80/files", headers: [:], maxAttempts: 1)),
            RequestEvent(time: 0, operationID: "up", attempt: 1, payload: .started),
            RequestEvent(time: 1, operationID: "up", attempt: 1, payload: .taskCreated(taskIdentifier: 1, url: "http://h:80/files")),
            RequestEvent(time: 3, operationID: "up", attempt: 1, payload: .uploaded(bytes: 10 << 20, totalBytes: 50 << 20)),
        ])
        var state = MonitorState()
        state.selectedID = "up"
        state.screen = .detail(id: "up", tab: .request)
        let visible = VisibleRows.compute(model, filter: "", sort: .arrival, now: 3)
        let text = MonitorView(model: model, state: state, visible: visible, theme: Theme(), now: 3).render(width: 160, height: 20).text
        XCTAssert(text.contains("↑ 10.0M of 50.0M · 5.0M/s · 8.0s left"), text)
        // The table's SIZE says it too (it showed nothing for a body going up).
        let row = try XCTUnwrap(model.row("up"))
        XCTAssertEqual(MonitorView.size(of: row, at: 3), "↑20%")
        state.screen = .table
        let table = MonitorView(model: model, state: state, visible: visible, theme: Theme(), now: 3).render(width: 160, height: 20).text
        XCTAssert(table.contains("↑20%"), table)
        model.apply([RequestEvent(time: 4, operationID: "up", attempt: 1, payload: .response(status: 201, headers: [:], expectedBytes: 0))])
        XCTAssertEqual(model.row("up")?.transfer(at: 4)?.direction, .down, "the answer began: the upload is over")
    }
}
