import Foundation
@testable import RequestArchive
import RequestEventFormat
import RequestOperations
import XCTest

/// The writer keeps every line within what the readers take.
final class EventLogWriterLineTests: XCTestCase {
    func testABodyThatWouldPassTheLineLimitIsLeftOutAndSaidSo() throws {
        let body = Data(repeating: 0xFF, count: 50 << 20)  // binary: base64, about 67 MiB
        let event = RequestEvent(time: 1, operationID: "huge", attempt: 1,
                                 payload: .responseBody(body: .bytes(body), totalBytes: body.count, truncated: false, mediaType: nil))
        let line = EventLogWriter.line(for: event)
        XCTAssertLessThanOrEqual(line.utf8.count, EventLogLines.maxLineBytes)
        XCTAssert(line.contains("too large for a recording's line (64 MiB)") && line.contains(#""totalBytes":52428800"#), String(line.prefix(400)))
        let small = RequestEvent(time: 1, operationID: "small", attempt: 1,
                                 payload: .responseBody(body: .bytes(Data("ok".utf8)), totalBytes: 2, truncated: false, mediaType: nil))
        XCTAssertEqual(EventLogWriter.line(for: small), EventLog.line(for: small))
    }
}
