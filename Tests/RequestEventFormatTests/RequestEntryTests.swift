import Foundation
import RequestEventFormat
import XCTest

/// The request a person edits: written as a plan entry, read back strictly, errors by line.
final class RequestEntryTests: XCTestCase {
    func testAnEntryRoundTripsAndReadsAsAPlanEntry() throws {
        let entry = RequestEntry(id: "order", method: "POST", url: "http://h/orders?x=1", headers: ["X-Trace": "t \"1\""],
                                 body: Data(#"{"item":7,"note":"a/b"}"#.utf8), timeout: 2.5, deadline: 30)
        XCTAssertTrue(entry.json.contains("  \"body\": {\n    \"item\" : 7,"), entry.json)
        let back = try RequestEntry.parse(entry.json, file: "edit")
        XCTAssertEqual(back.method, "POST")
        XCTAssertEqual(back.headers, ["X-Trace": "t \"1\""])
        XCTAssertEqual(try JSONSerialization.jsonObject(with: back.body!) as? NSDictionary, ["item": 7, "note": "a/b"])
        XCTAssertEqual(back.timeout, 2.5)
        XCTAssertEqual(back.deadline, 30)
        let text = RequestEntry(id: "t", method: "PUT", url: "http://h/", headers: [:], body: Data("plain words".utf8))
        XCTAssertEqual(try RequestEntry.parse(text.json, file: "edit").body, Data("plain words".utf8))
    }

    func testABrokenEditIsNamedByLineOrField() {
        func message(_ text: String) -> String {
            do {
                _ = try RequestEntry.parse(text, file: "the edit of order")
                return ""
            } catch {
                return "\(error)"
            }
        }
        XCTAssertTrue(message("{\n  \"url\": \"http://h/\",\n  \"method\": \"GET\"\n  \"x\": 1\n}").contains("line 4"), message("{\n\"url\": 1,\n}"))
        XCTAssertTrue(message(#"{"url": "ftp://h/"}"#).contains("url"))
        XCTAssertTrue(message(#"{"url": "http://h/", "retries": 3}"#).contains("retries"))
        XCTAssertTrue(message(#"{"url": "http://h/", "headers": {"X-A": 1}}"#).contains("headers.X-A"))
        XCTAssertTrue(message(#"{"url": "http://h/", "headers": {"X-A": "a\r\nInjected: 1"}}"#).contains("headers.X-A"))
        XCTAssertTrue(message(#"{"url": "http://h/", "method": "GE T"}"#).contains("method"))
    }
}
