@testable import RequestMonitor
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
