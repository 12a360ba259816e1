import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestMonitor
import RequestEndpoint
import RequestEventFormat
import RequestOperations
import XCTest

/// One match language (#42): `host:`, `path:`, `method:`, `header:` pick the same requests in
/// the `/` filter, a breakpoint, a fault rule and an endpoint command. One table, four users.
final class MatchLanguageTests: XCTestCase {
    /// (text, url, method, headers, expected)
    private let table: [(String, String, String, [String: String], Bool)] = [
        ("host:40139", "http://127.0.0.1:40139/x", "GET", [:], true),
        ("host:127.0.0.1:40139", "http://127.0.0.1:40139/x", "GET", [:], true),
        ("host:127.0.0.1", "http://127.0.0.1:40139/x", "GET", [:], true),
        ("host:40140", "http://127.0.0.1:40139/x", "GET", [:], false),
        ("host:api.example.com", "https://api.example.com/v1", "GET", [:], true),
        ("host:api.example.com:443", "https://api.example.com/v1", "GET", [:], true),
        ("host:443", "https://api.example.com/v1", "GET", [:], true),
        ("host:80", "https://api.example.com/v1", "GET", [:], false),
        ("host:EXAMPLE", "https://api.example.com/v1", "GET", [:], true),
        ("path:/v1/orders", "http://h:1/v1/orders/7?x=1", "GET", [:], true),
        ("path:/orders", "http://h:1/v1/orders/7", "GET", [:], false),
        ("path:orders", "http://h:1/v1/orders/7", "GET", [:], true),
        ("path:x=1", "http://h:1/v1/orders?x=1", "GET", [:], false),
        ("method:post", "http://h:1/", "POST", [:], true),
        ("method:GET", "http://h:1/", "POST", [:], false),
        ("header:x-tenant=acme", "http://h:1/", "GET", ["X-Tenant": "Acme-eu"], true),
        ("header:x-tenant=beta", "http://h:1/", "GET", ["X-Tenant": "acme"], false),
        ("header:x-tenant", "http://h:1/", "GET", ["X-Tenant": "acme"], true),
        ("host:40139 method:GET", "http://127.0.0.1:40139/x", "GET", [:], true),
        ("!host:40139", "http://127.0.0.1:40139/x", "GET", [:], false),
    ]

    private func request(_ url: String, _ method: String, _ headers: [String: String]) -> URLRequest {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    private func row(_ url: String, _ method: String, _ headers: [String: String]) -> OperationRow {
        var model = QueueModel(source: "test")
        model.apply([RequestEvent(time: 0, operationID: "a", attempt: 1, payload: .queued(method: method, url: url, headers: headers, maxAttempts: 1))])
        return model.row("a")!
    }

    func testEveryUserReadsTheTermsAlike() throws {
        for (text, url, method, headers, expected) in table {
            let request = request(url, method, headers)
            // The `/` filter.
            XCTAssertEqual(RowFilter(text).matches(row(url, method, headers)), expected, "filter \(text) on \(url)")
            // A breakpoint (`B`, queue.breakpoints, the endpoint's addBreakpoint all parse this).
            let breakpoint = try Breakpoint(parsing: text, setBy: "test")
            XCTAssertEqual(breakpoint.match.matches(request), expected, "breakpoint \(text) on \(url)")
            // A fault rule (plan, library, Hosts view).
            let rule = FaultRule(match: try RequestMatch(text), effect: .status(503, retryAfter: nil), setBy: "test")
            XCTAssertEqual(rule.match.matches(request), expected, "fault rule \(text) on \(url)")
            // An endpoint command as it crosses the wire.
            let wire = EndpointProtocol.line(for: .addBreakpoint(match: text), id: 1)
            guard case .addBreakpoint(let sent) = try EndpointProtocol.parse(wire).command else { return XCTFail("decoded") }
            XCTAssertEqual(try RequestMatch(sent).matches(request), expected, "endpoint \(text) on \(url)")
        }
    }

    func testAnUnknownKeyIsNamedWithASuggestion() {
        XCTAssertEqual(RowFilter("stauts:5xx").problems,
                       [#""stauts:" is not a filter key (did you mean "status:"?); searched for as text. Keys: state: status: method: host: path: body: header: program:"#])
        XCTAssertEqual(RowFilter("zzz:1 https://x").problems.count, 1, "http(s): is a URL, not a key")
        XCTAssertThrowsError(try RequestMatch("hots:api")) { error in
            XCTAssert("\(error)".contains(#"(did you mean "host:"?)"#), "\(error)")
        }
        var state = MonitorState()
        let context = MonitorUpdate.Context(visible: [], pageSize: 20, model: QueueModel(source: "t"), canCommand: true, canCancel: true)
        _ = MonitorUpdate.update(&state, .startFilter, context)
        for character in "stauts:503" { _ = MonitorUpdate.update(&state, .filterInput(.character(character)), context) }
        _ = MonitorUpdate.update(&state, .filterInput(.enter), context)
        XCTAssert(state.flash?.contains(#"did you mean "status:"?"#) == true, state.flash ?? "")
    }

    func testSettingABreakpointSaysWhatItMatchesNow() {
        var model = QueueModel(source: "test")
        for (index, port) in [40139, 40139, 5000].enumerated() {
            model.apply([RequestEvent(time: 0, operationID: "r\(index)", attempt: 1, payload: .queued(method: "GET", url: "http://127.0.0.1:\(port)/x", headers: [:], maxAttempts: 1))])
        }
        var state = MonitorState()
        let context = MonitorUpdate.Context(visible: ["r0", "r1", "r2"], pageSize: 20, model: model, canCommand: true, canCancel: true)
        _ = MonitorUpdate.update(&state, .answered(.queue(.addBreakpoint(match: "host:40139")),
                                                   CommandAnswer("BREAK: breakpoint 1 stops host:40139 before sending")), context)
        XCTAssert(state.flash?.hasSuffix("· matches 2 of the 3 requests so far") == true, state.flash ?? "")
    }

    func testTheConfirmationSaysTheStageOnce() {
        XCTAssertEqual(QueueCommandOutcome.breakpointSet(id: 2, match: "after path:/x").message,
                       "BREAK: breakpoint 2 stops path:/x after the answer, before the retry decision (on one: s go on, a answer instead, f fail, X cancel)")
        XCTAssertEqual(QueueCommandOutcome.breakpointSet(id: 3, match: "host:1").message,
                       "BREAK: breakpoint 3 stops host:1 before sending (on one: s send, e edit, a answer, f fail, X cancel)")
        XCTAssertEqual(QueueCommandOutcome.breakpointSet(id: 4, match: "").message,
                       "BREAK: breakpoint 4 stops every request before sending (on one: s send, e edit, a answer, f fail, X cancel)")
    }
}
