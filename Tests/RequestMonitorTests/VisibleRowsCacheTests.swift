import Foundation
@testable import RequestMonitor
import RequestOperations
import XCTest

/// The cache that keeps each row's text match gives exactly what computing every row anew
/// gives, after every batch of events: new rows, state changes, built requests that change a
/// row's search text, finished rows let go (rows move), and the filter changing in between,
/// outright or typed a letter at a time.
final class VisibleRowsCacheTests: XCTestCase {
    func testTheSameAsComputingEveryRowAfterEachBatch() {
        var model = QueueModel(source: "cache", finishedLimit: 300)
        var cache = VisibleRowsCache()
        var generator = SystemRandomNumberGenerator()
        // Typed a letter at a time in places (each narrows the one before), and changed outright.
        let filters = ["a", "ap", "api", "api-3", "items/1 state:ok", "i", "it", "items/1", "items/1 api-2", "status:5xx api", "GET",
                       "nothing", "b", "built", "", "api-3 method:post", "api-3 method:post built", "sent", "sent.test/op-1"]
        var next = 0, t = 0.0
        var open: [String] = []
        for round in 0..<150 {
            for _ in 0..<Int.random(in: 1...40, using: &generator) {
                t += 0.01
                if open.isEmpty || Bool.random(using: &generator) {
                    let id = "op-\(next)"
                    next += 1
                    open.append(id)
                    model.apply(RequestEvent(time: t, operationID: id, attempt: 1,
                                             payload: .queued(method: next % 5 == 0 ? "POST" : "GET", url: "http://api-\(next % 7).test/items/\(next)", headers: [:], maxAttempts: 3)))
                    continue
                }
                let id = open.randomElement(using: &generator)!
                switch Int.random(in: 0..<5, using: &generator) {
                case 0: model.apply(RequestEvent(time: t, operationID: id, attempt: 1, payload: .started))
                case 4: model.apply(RequestEvent(time: t, operationID: id, attempt: 1,
                                                 payload: .taskCreated(taskIdentifier: next, url: "http://sent.test/\(id)")))
                case 1: model.apply(RequestEvent(time: t, operationID: id, attempt: 1,
                                                 payload: .built(method: "GET", url: "http://built.test/\(id)", headers: [:], body: nil)))
                default:
                    let failed = Bool.random(using: &generator)
                    model.apply(RequestEvent(time: t, operationID: id, attempt: 1,
                                             payload: .finished(outcome: failed ? .failure : .success, status: failed ? 503 : 200, attempts: 1, duration: 0.1, reason: nil)))
                    open.removeAll { $0 == id }
                }
            }
            let filter = filters[(round / 3) % filters.count]
            // The reference matches each row's text made afresh from its fields, not the
            // model's buffer of texts the cache reads.
            let rowFilter = RowFilter(filter)
            let matching = model.rows.indices.filter { rowFilter.matches(model.rows[$0]) }
            for sort in [MonitorState.Sort.arrival, .host] {
                let expected = VisibleRows.sorted(matching, model, sort: sort, now: t)
                XCTAssertEqual(cache.compute(model, filter: filter, sort: sort, now: t), expected, "round \(round), filter \(filter), sort \(sort)")
                XCTAssertEqual(VisibleRows.compute(model, filter: filter, sort: sort, now: t), expected, "round \(round), filter \(filter), sort \(sort)")
            }
        }
        XCTAssertGreaterThan(model.forgotten, 0, "rows were let go on the way")
        XCTAssertGreaterThan(model.layout, 0)
    }
}
