import Foundation
@testable import RequestMonitor
import RequestOperations
import XCTest

/// Finished rows are packed (their events in a few bytes, the detail read back when shown):
/// the table, every detail tab and every field must be what they were.
final class RowPackingTests: XCTestCase {
    /// Random sessions of every kind a row reacts to, applied to a model that packs finished
    /// rows and one that does not: equal rows, the same text on every tab of every row.
    func testAPackedRowShowsWhatItShowedBefore() throws {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<6 {
            var packing = QueueModel(source: "random")
            var plain = QueueModel(source: "random")
            plain.packsFinishedRows = false
            var t = 0.0
            for index in 0..<600 {
                let op = "op-\(Int.random(in: 0..<40, using: &generator))"
                t += Double.random(in: 0...0.05, using: &generator)
                let event = RequestEvent(time: t, operationID: op, attempt: Int.random(in: 1...3, using: &generator),
                                         payload: Self.randomPayload(index, &generator))
                packing.apply(event)
                plain.apply(event)
            }
            // Some finished early and took more events (unpacked again); some still run.
            XCTAssertEqual(packing.rows, plain.rows, "round \(round)")
            XCTAssertTrue(packing.rows.allSatisfy { !$0.isPacked || $0.state.isFinished }, "round \(round): only finished rows are packed")
            if round % 2 == 0 {
                for row in plain.rows {
                    t += 0.01
                    let event = RequestEvent(time: t, operationID: row.id, attempt: row.attempt,
                                             payload: .finished(outcome: .success, status: 200, attempts: row.attempt, duration: t - row.queuedAt, reason: nil))
                    packing.apply(event)
                    plain.apply(event)
                }
                XCTAssertTrue(packing.rows.allSatisfy(\.isPacked), "round \(round): every row finished and packed")
                XCTAssertEqual(packing.rows, plain.rows, "round \(round)")
            }
            for row in plain.rows {
                XCTAssertEqual(packing.row(row.id)?.events, row.events)
                XCTAssertEqual(packing.row(row.id)?.attempts, row.attempts)
                // Every tab of a quarter of the rows (a debug build draws slowly).
                for tab in MonitorState.DetailTab.allCases where row.sequence % 4 == round % 4 {
                    var state = MonitorState()
                    state.screen = .detail(id: row.id, tab: tab)
                    let packed = MonitorView(model: packing, state: state, visible: packing.rows.indices.map { $0 }, theme: Theme(), now: t).render(width: 120, height: 30)
                    let shown = MonitorView(model: plain, state: state, visible: plain.rows.indices.map { $0 }, theme: Theme(), now: t).render(width: 120, height: 30)
                    XCTAssertEqual(packed.text, shown.text, "\(row.id) \(tab)")
                }
            }
            let table = MonitorView(model: packing, state: MonitorState(), visible: packing.rows.indices.map { $0 }, theme: Theme(), now: t).render(width: 200, height: 50)
            XCTAssertEqual(table.text, MonitorView(model: plain, state: MonitorState(), visible: plain.rows.indices.map { $0 }, theme: Theme(), now: t).render(width: 200, height: 50).text)
        }
    }

    /// An event after `finished` (a person's retry of it): the row is unpacked, takes it, and
    /// is packed again when it finishes again.
    func testAFinishedRowTakesMoreEvents() {
        var model = QueueModel(source: "test")
        func apply(_ t: Double, _ attempt: Int, _ payload: RequestEvent.Payload) {
            model.apply(RequestEvent(time: t, operationID: "again", attempt: attempt, payload: payload))
        }
        apply(0, 1, .queued(method: "GET", url: "http://a.test/x", headers: ["Accept": "*/*"], maxAttempts: 2))
        apply(0, 1, .started)
        apply(0.1, 1, .response(status: 500, headers: [:], expectedBytes: nil))
        apply(0.2, 1, .finished(outcome: .failure, status: 500, attempts: 1, duration: 0.2, reason: "status 500"))
        XCTAssertEqual(model.row("again")?.isPacked, true)
        apply(1, 2, .requeued(by: "monitor", reason: "retried by hand"))
        XCTAssertEqual(model.row("again")?.isPacked, false)
        XCTAssertEqual(model.row("again")?.reason, "retried by hand")
        apply(1, 2, .started)
        XCTAssertEqual(model.row("again")?.state, .preparing)
        apply(1.1, 2, .response(status: 200, headers: [:], expectedBytes: nil))
        apply(1.2, 2, .finished(outcome: .success, status: 200, attempts: 2, duration: 1.2, reason: nil))
        let row = model.row("again")
        XCTAssertEqual(row?.isPacked, true)
        XCTAssertEqual(row?.events.map(\.payload.name), ["queued", "started", "response", "finished", "requeued", "started", "response", "finished"])
        XCTAssertEqual(row?.attempts.map(\.status), [500, 200])
        XCTAssertEqual(row?.requestHeaders, ["Accept": "*/*"])
    }

    /// The path is kept as where it starts in the URL when the URL ends with it.
    func testThePathIsTheURLsEndOrItsOwn() {
        let cases: [(url: String, path: String, host: String)] = [
            ("http://a.test:8080/items/1?page=2", "/items/1?page=2", "a.test:8080"),
            ("http://a.test", "/", "a.test"),
            ("http://a.test/", "/", "a.test"),
            ("http://a.test/x#top", "/x", "a.test"),
            ("http://a.test/caf%C3%A9?q=%20", "/caf%C3%A9?q=%20", "a.test"),
            ("http://a.test/e\u{301}", "", "a.test"),
            ("not a url", "not%20a%20url", ""),
        ]
        for (index, item) in cases.enumerated() {
            var model = QueueModel(source: "test")
            model.apply(RequestEvent(time: 0, operationID: "op", attempt: 1, payload: .queued(method: "GET", url: item.url, headers: [:], maxAttempts: nil)))
            let row = model.row("op")!
            if !item.path.isEmpty { XCTAssertEqual(row.path, item.path, "case \(index)") }
            XCTAssertEqual(row.host, item.host, "case \(index)")
            XCTAssertTrue(row.url.hasSuffix(row.path) || row.ownPath != nil, "case \(index)")
            model.apply(RequestEvent(time: 1, operationID: "op", attempt: 1, payload: .built(method: "GET", url: "http://b.test/other", headers: [:], body: nil)))
            XCTAssertEqual(model.row("op")?.path, "/other", "case \(index): a built request's path")
        }
        // No URL at all (a request the proxy could not read): no path, not `/`.
        var model = QueueModel(source: "test")
        model.apply(RequestEvent(time: 0, operationID: "unread", attempt: 1, payload: .queued(method: "", url: "", headers: [:], maxAttempts: 1)))
        XCTAssertEqual(model.row("unread")?.path, "")
        XCTAssertEqual(model.row("unread")?.host, "")
    }

    static func randomPayload(_ index: Int, _ generator: inout SystemRandomNumberGenerator) -> RequestEvent.Payload {
        let host = ["a.test", "b.test:8080"][index % 2]
        switch Int.random(in: 0..<24, using: &generator) {
        case 0: return .queued(method: "GET", url: "http://\(host)/x?i=\(index)", headers: ["Accept": "*/*", "X-N": "\(index)"], maxAttempts: 3,
                               body: index % 3 == 0 ? .bytes(Data("id=\(index)".utf8)) : nil,
                               options: index % 4 == 0 ? RecordedOptions(attemptTimeout: 2, deadline: 30) : nil)
        case 1: return .built(method: "POST", url: "http://\(host)/y", headers: [:], body: .omitted(bytes: 9, reason: "a stream"))
        case 2, 3: return .started
        case 4: return .taskCreated(taskIdentifier: index, url: "http://\(host)/z")
        case 5: return .sent
        case 6: return .connection(id: index % 5, reused: index % 2 == 0)
        case 7: return .response(status: [200, 503, 404][index % 3], headers: ["Retry-After": "1"], expectedBytes: index % 2 == 0 ? 100 : nil)
        case 8, 9: return .data(bytes: index % 50)
        case 10: return .taskCompleted(error: index % 2 == 0 ? nil : TransportError(code: -1005, message: "network connection lost"))
        case 11: return .retryScheduled(delay: 0.25, reason: "status 503; backoff")
        case 12: return .retryDenied(reason: "retry budget")
        case 13: return .hedged(racing: 1, after: 0.1)
        case 14: return .intercepted(by: "auth", command: index % 2 == 0 ? "execute" : "retry")
        case 15: return .held(batch: "uploads")
        case 16: return .released(batch: "uploads", size: 2)
        case 17: return .reactorStarted(name: "refresh", trigger: "401")
        case 18: return .reactorFinished(name: "refresh", outcome: index % 2 == 0 ? "success" : "failed")
        case 19: return .rateLimitWaiting(host: host, until: Double(index))
        case 20: return .circuitWaiting(host: host)
        case 21: return .earlyRetry(trigger: "probe", delay: 0.1)
        case 22: return .cancelled(by: "caller")
        default: return .finished(outcome: [.success, .failure, .cancelled][index % 3], status: index % 2 == 0 ? 200 : nil,
                                  attempts: 2, duration: 0.5, reason: index % 2 == 0 ? nil : "retries exhausted")
        }
    }
}
