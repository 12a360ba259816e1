import Foundation
@testable import RequestMonitor
import RequestOperations
import XCTest

/// The filter's host, path, header and body words, `!` and quotes: what a person types to
/// find the request they are after (mitmproxy's `~d`, `~u`, `~h`, `~b`, `!`).
final class FilterTermsTests: XCTestCase {
    private func model(finished: Bool = true) -> QueueModel {
        var model = QueueModel(source: "test")
        let rows: [(String, String, [String: String], String, Int)] = [
            ("a", "https://api.example.com/v1/orders/7", ["X-Request-Id": "abc-1"], #"{"error":"Out of stock"}"#, 409),
            ("b", "https://api.example.com/v1/users/me", ["X-Request-Id": "def-2"], #"{"name":"me"}"#, 200),
            ("c", "https://cdn.example.net/v1/orders.css", [:], "body { color: red }", 200),
        ]
        for (index, (id, url, headers, body, status)) in rows.enumerated() {
            let t = Double(index)
            var events = [
                RequestEvent(time: t, operationID: id, attempt: 1, payload: .queued(method: "GET", url: url, headers: headers, maxAttempts: 1)),
                RequestEvent(time: t, operationID: id, attempt: 1, payload: .started),
                RequestEvent(time: t, operationID: id, attempt: 1, payload: .response(status: status, headers: ["Retry-After": "2"], expectedBytes: nil)),
                RequestEvent(time: t, operationID: id, attempt: 1, payload: .responseBody(body: .bytes(Data(body.utf8)), totalBytes: body.utf8.count,
                                                                                          truncated: false, mediaType: nil)),
            ]
            if finished {
                events.append(RequestEvent(time: t + 0.5, operationID: id, attempt: 1,
                                           payload: .finished(outcome: status < 400 ? .success : .failure, status: status, attempts: 1, duration: 0.5, reason: nil)))
            }
            model.apply(events)
        }
        return model
    }

    private func ids(_ filter: String, _ model: QueueModel) -> [String] {
        VisibleRows.compute(model, filter: filter, sort: .arrival, now: 10).map { model.rows[$0].id }
    }

    func testEachTermFindsItsRowsFinishedOrStillRunning() {
        for model in [model(finished: true), model(finished: false)] {
            XCTAssertEqual(ids("host:api.example.com", model), ["a", "b"])
            XCTAssertEqual(ids("path:/v1/orders", model), ["a", "c"])
            XCTAssertEqual(ids("header:x-request-id=abc", model), ["a"])
            XCTAssertEqual(ids("header:X-Request-Id", model), ["a", "b"], "a name alone, any case")
            XCTAssertEqual(ids("header:retry-after=2", model), ["a", "b", "c"], "response headers too")
            XCTAssertEqual(ids(#"body:"out of stock""#, model), ["a"], "quoted, any case")
            XCTAssertEqual(ids(#"!body:"out of stock""#, model), ["b", "c"])
            XCTAssertEqual(ids("!host:cdn path:/v1", model), ["a", "b"])
            XCTAssertEqual(ids("!orders", model), ["b"], "! before a plain word")
            XCTAssertEqual(ids("body:nowhere", model), [])
        }
        XCTAssertEqual(ids("status:4xx body:stock", model()), ["a"])
    }

    func testWordsKeepQuotedSpaces() {
        XCTAssertEqual(RowFilter.words(#"body:"out of stock" host:a  b"#), ["body:out of stock", "host:a", "b"])
    }

    /// The cache the monitor filters through answers the same.
    func testTheMonitorsCacheAgrees() {
        let model = model()
        var cache = VisibleCache()
        var state = MonitorState()
        state.filter = #"body:"out of stock""#
        XCTAssertEqual(cache.ids(model: model, state: state, now: 10), ["a"])
    }
}
