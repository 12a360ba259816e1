import Foundation
@testable import RequestEventFormat
import RequestOperations
import XCTest

/// The fast line reader on a line with many members (a response with 40,000 headers): every
/// member read, a repeated key still declined past the first few. Before, each key was
/// checked against all the ones before it (replay took 52 s on 40,000 headers, diff 108 s);
/// the time is measured in reqtop-archive-bench, not here.
final class FlatJSONObjectTests: XCTestCase {
    private func parse(_ text: String) -> FlatJSONObject? {
        Array(text.utf8).withUnsafeBytes { FlatJSONObject.parse($0) }
    }

    func testAnObjectWithManyMembersIsReadWhole() throws {
        let headers = (0..<40_000).map { #""X-H\#($0)":"v\#($0)""# }.joined(separator: ",")
        let object = try XCTUnwrap(parse(#"{"event":"response","status":200,"headers":{\#(headers)}}"#))
        guard case .object(let inner)? = object["headers"] else { return XCTFail("headers: \(String(describing: object["headers"]))") }
        XCTAssertEqual(inner.members.count, 40_000)
        XCTAssertEqual(inner.members.last?.key, "X-H39999")
    }

    func testARepeatedKeyIsDeclinedWhereverItIs() {
        for count in [3, 16, 17, 500] {
            let members = (0..<count).map { #""k\#($0)":\#($0)"# } + [#""k\#(count / 2)":"again""#]
            XCTAssertNil(parse("{" + members.joined(separator: ",") + "}"), "\(count) members and a repeat")
            XCTAssertNotNil(parse("{" + members.dropLast().joined(separator: ",") + "}"), "\(count) members")
        }
    }

    func testARecordedLineWithManyHeadersReadsBackTheSame() throws {
        let headers = Dictionary(uniqueKeysWithValues: (0..<5_000).map { ("X-H\($0)", "v\($0)") })
        let event = RequestEvent(time: 0.2, operationID: "a", attempt: 1, payload: .response(status: 200, headers: headers, expectedBytes: nil))
        let line = EventLog.line(for: event)
        let read = try XCTUnwrap(EventLog.parse(line: line, lineNumber: 1))
        guard case .response(_, let back, _, _) = read.payload else { return XCTFail("\(read)") }
        XCTAssertEqual(back, headers)
    }
}
