import Foundation
@testable import RequestMonitor
import RequestOperations
import XCTest

/// Every sort gives exactly the order of the plain comparison it stands for (ties in
/// arrival order), with and without a filter, on rows of mixed hosts, states and durations.
final class VisibleRowsSortTests: XCTestCase {
    func testEachSortIsTheComparisonItStandsFor() {
        var model = QueueModel(source: "sorts")
        var random = SystemRandomNumberGenerator()
        let hosts = ["b.test:80", "a.test:80", "c.test:8080", "a.test:81", "api-3.test:80"]
        for index in 0..<2_000 {
            let id = "op-\(index)", t = Double(index) * 0.01
            let host = hosts[Int.random(in: 0..<hosts.count, using: &random)]
            model.apply(RequestEvent(time: t, operationID: id, attempt: 1, payload: .queued(method: "GET", url: "http://\(host)/items/\(index)", headers: [:], maxAttempts: 3)))
            switch Int.random(in: 0..<4, using: &random) {
            case 0: break
            case 1: model.apply(RequestEvent(time: t, operationID: id, attempt: 1, payload: .started))
            case 2: model.apply(RequestEvent(time: t + 0.5, operationID: id, attempt: 1, payload: .finished(outcome: .success, status: 200, attempts: 1,
                                                                                                       duration: Double.random(in: 0...3, using: &random), reason: nil)))
            default: model.apply(RequestEvent(time: t + 0.5, operationID: id, attempt: 1, payload: .finished(outcome: .failure, status: 503, attempts: 1, duration: 0.5, reason: nil)))
            }
        }
        let now = model.latest + 1
        let order = Dictionary(uniqueKeysWithValues: OperationRow.State.allCases.enumerated().map { ($1, $0) })
        for filter in ["", "items/1", "status:5xx"] {
            let base = VisibleRows.compute(model, filter: filter, sort: .arrival, now: now)
            XCTAssertEqual(VisibleRows.compute(model, filter: filter, sort: .state, now: now),
                           base.sorted { (order[model.rows[$0].state]!, $0) < (order[model.rows[$1].state]!, $1) }, "state, filter \(filter)")
            XCTAssertEqual(VisibleRows.compute(model, filter: filter, sort: .host, now: now),
                           base.sorted { (model.rows[$0].host, $0) < (model.rows[$1].host, $1) }, "host, filter \(filter)")
            XCTAssertEqual(VisibleRows.compute(model, filter: filter, sort: .duration, now: now),
                           base.sorted { (-model.rows[$0].elapsed(at: now), $0) < (-model.rows[$1].elapsed(at: now), $1) }, "duration, filter \(filter)")
        }
    }
}
