import Foundation
import HTTPTypes
@testable import RequestMonitor
import RequestOperations
import XCTest

/// The Body tab: what the server said, readable. Rendered to text a test reads.
final class BodyTabTests: XCTestCase {
    private func model(body: Data, type: String?, truncated: Bool = false, total: Int? = nil) -> QueueModel {
        var model = QueueModel(source: "test")
        model.apply([
            RequestEvent(time: 0, operationID: "op", attempt: 1, payload: .queued(method: "POST", url: "http://h/orders",
                                                                                  headers: ["Content-Type": "application/json"], maxAttempts: 1,
                                                                                  body: .bytes(Data(#"{"item":7}"#.utf8)))),
            RequestEvent(time: 0.01, operationID: "op", attempt: 1, payload: .started),
            RequestEvent(time: 0.02, operationID: "op", attempt: 1, payload: .response(status: 409, headers: ["Content-Type": type ?? ""], expectedBytes: nil)),
            RequestEvent(time: 0.03, operationID: "op", attempt: 1,
                         payload: .responseBody(body: .bytes(body), totalBytes: total ?? body.count, truncated: truncated, mediaType: type)),
            RequestEvent(time: 0.04, operationID: "op", attempt: 1, payload: .taskCompleted(error: nil)),
        ])
        return model
    }

    private func render(_ model: QueueModel, scroll: Int = 0, height: Int = 30) -> String {
        var state = MonitorState()
        state.screen = .detail(id: "op", tab: .body)
        state.bodyScroll = scroll
        let visible = VisibleRows.compute(model, filter: "", sort: .arrival, now: 1)
        return MonitorView(model: model, state: state, visible: visible, theme: Theme(color: false), now: 1).render(width: 100, height: height).text
    }

    func testJSONIsPrettyPrintedWithLineNumbersInTheServersOrder() {
        let text = render(model(body: Data(#"{"error":"out of stock","sku":"A-1","left":0,"retry":null,"tags":[],"at":{"shelf":3}}"#.utf8), type: "application/json"))
        XCTAssertTrue(text.contains("request body · 10B"), text)
        XCTAssertTrue(text.contains(#"1  {"#), text)
        XCTAssertTrue(text.contains(#"2    "item": 7"#), text)
        XCTAssertTrue(text.contains("response body (attempt 1) · 85B · application/json"), text)
        for expected in [#" 2    "error": "out of stock","#, #" 4    "left": 0,"#, #" 5    "retry": null,"#, #" 6    "tags": [],"#,
                         #" 8      "shelf": 3"#, #"10  }"#] {
            XCTAssertTrue(text.contains(expected), "\(expected) in\n\(text)")
        }
    }

    func testTokensAreToldApart() {
        let lines = BodyText.lines(Data(#"{"a":"x","n":-1.5e3,"t":true}"#.utf8), mediaType: "application/json")
        XCTAssertEqual(lines[1].runs.map(\.kind), [.plain, .key, .punctuation, .string, .punctuation])
        XCTAssertEqual(lines[2].runs.last?.kind, .punctuation)
        XCTAssertEqual(lines[2].runs.first { $0.text == "-1.5e3" }?.kind, .number)
        XCTAssertEqual(lines[3].runs.first { $0.text == "true" }?.kind, .literal)
    }

    func testInvalidJSONIsTextWithWhereItBroke() {
        let text = render(model(body: Data("{\"a\": 1,\n \"b\": }".utf8), type: "application/json"))
        XCTAssertTrue(text.contains("not valid JSON:"), text)
        XCTAssertTrue(text.contains("line 2"), text)
        XCTAssertTrue(text.contains(#" "b": }"#), text)
    }

    func testBinaryIsAHexDumpAndACutBodySaysSo() {
        let text = render(model(body: Data([0x00, 0x01, 0x41, 0x42, 0xFF]), type: "application/octet-stream", truncated: true, total: 70_000))
        XCTAssertTrue(text.contains("00000000  00 01 41 42 ff"), text)
        XCTAssertTrue(text.contains("..AB."), text)
        XCTAssertTrue(text.contains("(truncated at the"), text)
        XCTAssertTrue(text.contains("more not recorded"), text)
    }

    func testALongBodyScrolls() {
        let long = Data((1...200).map { "line \($0)" }.joined(separator: "\n").utf8)
        let top = render(model(body: long, type: "text/plain"), height: 20)
        XCTAssertTrue(top.contains("lines 1–15 of"), top)
        let scrolled = render(model(body: long, type: "text/plain"), scroll: 100, height: 20)
        XCTAssertTrue(scrolled.contains("line 96"), scrolled)
        XCTAssertFalse(scrolled.contains("request body"), scrolled)
    }

    /// `/` in the Body tab finds a word; `n` and `N` go from match to match, wrapping, and
    /// every match on screen is highlighted.
    func testFindInTheBodyAndStepThroughTheMatches() {
        let long = Data((1...200).map { $0 % 50 == 0 ? "line \($0) Out Of Stock" : "line \($0)" }.joined(separator: "\n").utf8)
        let model = model(body: long, type: "text/plain")
        var state = MonitorState()
        state.screen = .detail(id: "op", tab: .body)
        let context = MonitorUpdate.Context(visible: ["op"], pageSize: 20, model: model, canCommand: true, canCancel: true)
        func press(_ key: KeyMap.Key) {
            if let action = KeyMap.action(for: key, in: state) { _ = MonitorUpdate.update(&state, action, context) }
        }
        press(.character("/"))
        XCTAssertEqual(state.findDraft, "")
        for character in "out of stock" { press(.character(character)) }
        press(.enter)
        XCTAssertEqual(state.find, "out of stock")
        let first = state.bodyScroll
        // The line as the gutter numbers it (the tab's own line \(first + 1) is under headings).
        XCTAssertEqual(state.flash, "\"out of stock\": response body line 50, match 1 of 4 · n N")
        XCTAssertGreaterThan(first + 1, 50)
        press(.character("n"))
        XCTAssertEqual(state.flash?.contains("match 2 of 4"), true, state.flash ?? "")
        press(.character("N"))
        press(.character("N"))
        XCTAssertEqual(state.flash?.contains("match 4 of 4"), true, "N wraps to the last: \(state.flash ?? "")")

        let visible = VisibleRows.compute(model, filter: "", sort: .arrival, now: 1)
        let grid = MonitorView(model: model, state: state, visible: visible, theme: Theme(color: false), now: 1).render(width: 100, height: 30)
        let row = grid.text.split(separator: "\n").firstIndex { $0.contains("line 200 Out Of Stock") }
        XCTAssertNotNil(row, grid.text)
        let column = Array(String(grid.text.split(separator: "\n")[row!])).firstIndex(of: "O")!
        XCTAssertTrue(grid.cell(x: column, y: row!).style.reverse, "the match is highlighted")
    }

    /// A line wider than the screen goes on under itself, past its number, never cut.
    func testALongLineWraps() {
        let long = Data((String(repeating: "word ", count: 40) + "END").utf8)
        let text = render(model(body: long, type: "text/plain"))
        XCTAssertTrue(text.contains("END"), text)
        let lines = text.split(separator: "\n").filter { $0.contains("word") }
        XCTAssertGreaterThan(lines.count, 1, text)
        XCTAssertTrue(lines.dropFirst().allSatisfy { $0.hasPrefix("    word") || $0.hasPrefix("    END") }, "continued past the number: \(lines)")
    }
}

extension BodyTabTests {
    /// Read as bytes since the 10 MB layout: characters past ASCII, escaped quotes and
    /// backslashes stay inside their tokens.
    func testTokensPastASCIIAndEscapesStayWhole() {
        let lines = BodyText.lines(Data(#"{"naïve":"日本\"語\\","e":"\u00e9","a":[1,{"b":[]}],"t":true}"#.utf8), mediaType: "application/json")
        XCTAssertEqual(lines.map(\.text), [
            "{",
            #"  "naïve": "日本\"語\\","#,
            #"  "e": "\u00e9","#,
            #"  "a": ["#,
            "    1,",
            "    {",
            #"      "b": []"#,
            "    }",
            "  ],",
            #"  "t": true"#,
            "}",
        ])
        XCTAssertEqual(lines[1].runs.map(\.kind), [.plain, .key, .punctuation, .string, .punctuation])
    }

    /// A gRPC call: its messages one by one, each with its fields as `protoc --decode_raw`
    /// prints them; the table's STAT is the call's status, the Response tab names it.
    func testAGRPCCallShowsItsMessagesAndItsStatus() throws {
        let message: [UInt8] = [0x08, 0x96, 0x01, 0x12, 0x02, 0x68, 0x69, 0x1a, 0x02, 0x08, 0x05]
        let framed = Data([0, 0, 0, 0, UInt8(message.count)] + message + [0, 0, 0, 0, 2, 0x08, 0x07])
        var model = QueueModel(source: "test")
        model.apply([
            RequestEvent(time: 0, operationID: "op", attempt: 1, payload: .queued(method: "POST", url: "https://h/pkg.Orders/Find",
                                                                                  headers: ["content-type": "application/grpc"], maxAttempts: 1, body: nil)),
            RequestEvent(time: 0.01, operationID: "op", attempt: 1, payload: .started),
            RequestEvent(time: 0.02, operationID: "op", attempt: 1, payload: .response(status: 200, headers: ["content-type": "application/grpc"], expectedBytes: nil)),
            RequestEvent(time: 0.03, operationID: "op", attempt: 1,
                         payload: .responseBody(body: .bytes(framed), totalBytes: framed.count, truncated: false, mediaType: "application/grpc")),
            RequestEvent(time: 0.03, operationID: "op", attempt: 1,
                         payload: .trailers(side: .response, fields: HTTPFields([HTTPField(name: HTTPField.Name("grpc-status")!, value: "7"),
                                                                     HTTPField(name: HTTPField.Name("grpc-message")!, value: "no%20entry")]))),
            RequestEvent(time: 0.04, operationID: "op", attempt: 1, payload: .taskCompleted(error: nil)),
            RequestEvent(time: 0.05, operationID: "op", attempt: 1, payload: .finished(outcome: .relayed, status: 200, attempts: 1, duration: 0.05, reason: nil)),
        ])
        let body = render(model)
        for expected in ["gRPC: 2 messages kept (11 B, 2 B)", "message 1 · 11 B", "1: 150", #"2: "hi""#, "3 {", "  1: 5", "message 2 · 2 B", "1: 7"] {
            XCTAssertTrue(body.contains(expected), "\(expected) in\n\(body)")
        }
        var state = MonitorState()
        state.screen = .detail(id: "op", tab: .response)
        let visible = VisibleRows.compute(model, filter: "", sort: .arrival, now: 1)
        let response = MonitorView(model: model, state: state, visible: visible, theme: Theme(color: false), now: 1).render(width: 100, height: 30).text
        XCTAssertTrue(response.contains("gRPC call /pkg.Orders/Find · status 7 PERMISSION_DENIED: no entry"), response)
        XCTAssertTrue(response.contains("trailers (after the body):") && response.contains("grpc-status: 7"), response)
        let table = MonitorView(model: model, state: MonitorState(), visible: visible, theme: Theme(color: false), now: 1).render(width: 140, height: 24).text
        XCTAssertTrue(table.contains(" g7 "), table)
        XCTAssertNil(RawProtobuf.lines(Data([0x0a, 0x05, 0x01])), "a length past the end is no message")
        // A hostile length past Int.max (a ten-byte varint): no message, not a trap.
        XCTAssertNil(RawProtobuf.lines(Data([0x0a] + [UInt8](repeating: 0xFF, count: 9) + [0x01])))
    }
}
