import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import XCTest

/// A header FoundationNetworking would drop without a word is refused, by name.
final class HeaderCheckTests: XCTestCase {
    func testAHeaderValueWithCRLFFailsTheOperationInsteadOfBeingDroppedSilently() throws {
        let server = try startServer()
        let queue = makeQueue()
        let recorder = EventRecorder(queue.events)
        var request = URLRequest(url: server.url("/echo"))
        // Set as a dictionary: `setValue(_:forHTTPHeaderField:)` on Linux drops such a value
        // itself, before reqtop could see it (the plan parser refuses it for that reason).
        request.allHTTPHeaderFields = ["Authorization": "Bearer abc\r\nX-Injected: yes"]
        let operation = queue.add(request)
        queue.waitUntilAllOperationsAreFinished()
        let result = try XCTUnwrap(operation.result)
        XCTAssertEqual(result.outcome, .failure)
        XCTAssertEqual(result.attempts.count, 1, "not retried: it would fail the same way")
        XCTAssertEqual(server.counters.hits("/echo"), 0, "nothing was sent")
        let reasons = recorder.events(of: operation.id).compactMap { event -> String? in
            if case .preparationFailed(let reason) = event.payload { return reason } else { return nil }
        }
        XCTAssertEqual(reasons, ["not sent: header Authorization: its value contains a CR, LF or NUL, which would split the header"])
    }

    func testTokensAndValues() {
        XCTAssertTrue(HTTPFieldCheck.isToken("PROPFIND"))
        XCTAssertTrue(HTTPFieldCheck.isToken("X-Api-Key"))
        XCTAssertFalse(HTTPFieldCheck.isToken(""))
        XCTAssertFalse(HTTPFieldCheck.isToken("GET /"))
        XCTAssertFalse(HTTPFieldCheck.isToken("X:Y"))
        XCTAssertNil(HTTPFieldCheck.valueProblem("a, b; q=0.5\t"))
        XCTAssertNotNil(HTTPFieldCheck.valueProblem("a\nb"))
        XCTAssertNotNil(HTTPFieldCheck.valueProblem("a\rb"))
        XCTAssertNotNil(HTTPFieldCheck.valueProblem("a\u{0}b"))
    }
}
