@testable import RequestMonitor
import RequestOperations
import XCTest

/// The table's filter and sorts, on the scripted session (`scriptedModel()`).
final class RowFilterTests: XCTestCase {
    func ids(_ filter: String) -> [String] {
        let model = scriptedModel()
        return VisibleRows.compute(model, filter: filter, sort: .arrival, now: 10).map { model.rows[$0].id }
    }

    func testFilters() {
        XCTAssertEqual(ids("state:failed"), ["down"])
        XCTAssertEqual(ids("state:ok"), ["ok-one"])
        XCTAssertEqual(ids("status:5xx"), ["flaky"])
        XCTAssertEqual(ids("status:200"), ["ok-one", "download"])
        XCTAssertEqual(ids("method:POST"), ["down"])
        XCTAssertEqual(ids("api.test state:queued"), ["later"])
        XCTAssertEqual(ids("FLAKY"), ["flaky"])
        XCTAssertEqual(ids(""), ["ok-one", "flaky", "download", "down", "gone", "later"])
    }

    /// Text is searched in a per-row key (id, host, path, method): case folded once, and a
    /// word never matches across two fields.
    func testAWordMatchesWithinOneFieldIgnoringCase() {
        XCTAssertEqual(ids("USERS/1"), ["ok-one"])
        XCTAssertEqual(ids("post"), ["down"], "the method")
        XCTAssertEqual(ids("ok-oneapi"), [], "id and host are separate fields")
        XCTAssertEqual(ids("nothing-matches-this"), [])
        XCTAssert(RowFilter.contains(Array("abcabd".utf8), Array("abd".utf8)))
        XCTAssertFalse(RowFilter.contains(Array("ab".utf8), Array("abc".utf8)))
        XCTAssert(RowFilter.contains([], []))
    }

    /// `program:` narrows to a proxy's client (the PROGRAM column), by name or pid; a row
    /// with no program is not matched; a relayed answer is its own state.
    func testAProgramsRowsAndRelayedAnswers() {
        var model = scriptedModel()
        for (id, program, outcome, status) in [("by-curl", "curl 4242", RequestOutcome.relayed, 404), ("by-python", "python3 77", .success, 200)] {
            var options = RecordedOptions()
            options.origin = program
            model.apply(RequestEvent(time: 5, operationID: id, attempt: 1, payload: .queued(method: "GET", url: "http://api.test/\(id)", headers: [:],
                                                                                           maxAttempts: 1, options: options)))
            model.apply(RequestEvent(time: 5.1, operationID: id, attempt: 1, payload: .finished(outcome: outcome, status: status, attempts: 1, duration: 0.1, reason: nil)))
        }
        let found = { (filter: String) in VisibleRows.compute(model, filter: filter, sort: .arrival, now: 10).map { model.rows[$0].id } }
        XCTAssertEqual(found("program:curl"), ["by-curl"])
        XCTAssertEqual(found("program:77"), ["by-python"])
        XCTAssertEqual(found("!program:curl program:"), ["by-python"])
        XCTAssertEqual(found("state:relayed"), ["by-curl"])
        XCTAssertFalse(found("state:failed").contains("by-curl"), "a relayed 404 is not a failure")
    }

    func testSorts() {
        let model = scriptedModel()
        func sorted(_ sort: MonitorState.Sort) -> [String] {
            VisibleRows.compute(model, filter: "", sort: sort, now: 10).map { model.rows[$0].id }
        }
        XCTAssertEqual(sorted(.state), ["later", "download", "flaky", "ok-one", "down", "gone"])
        XCTAssertEqual(sorted(.duration).first, "flaky")
        XCTAssertEqual(sorted(.host).first, "ok-one")
    }
}
