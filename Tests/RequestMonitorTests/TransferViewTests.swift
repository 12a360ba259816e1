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
    }
}
