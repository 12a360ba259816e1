import Foundation
@testable import RequestOperations
import XCTest

/// A row that is not an operation (a proxy's tunnel) tells the sequence an operation does,
/// ends once, and says nothing after its end.
final class ExternalRowTests: XCTestCase {
    func testARowOpensTellsItsBytesAsChangesAndEndsOnce() {
        let clock = ManualClock(now: 0)
        let recorder = EventRecorder(EventHub(clock: clock, deliveryDelay: 0))
        var row = ExternalRow(id: "t1", method: "CONNECT", url: "https://example.test:443", headers: [:], origin: "curl", events: recorder.hub)
        row.publish(.response(status: 101, headers: [:], expectedBytes: nil))
        row.progress(sent: 10, received: 100)
        row.progress(sent: 10, received: 100)
        row.progress(sent: 25, received: 140)
        clock.advance(by: 2)
        row.end(error: nil, reason: "tunnel closed")
        row.end(error: "late", reason: "again")
        row.progress(sent: 99, received: 999)
        XCTAssertEqual(recorder.names(of: "t1"), ["queued", "started", "taskCreated", "response", "uploaded", "data", "uploaded", "data",
                                                  "taskCompleted", "finished"])
        let told = recorder.events(of: "t1").compactMap { event -> Int? in if case .data(let bytes) = event.payload { bytes } else { nil } }
        XCTAssertEqual(told, [100, 40], "data events tell what came since the last one")
        guard case .finished(let outcome, let status, let attempts, let duration, let reason)? = recorder.events(of: "t1").last?.payload else {
            return XCTFail("ends with finished")
        }
        XCTAssertEqual(outcome, .success)
        XCTAssertEqual(status, 101)
        XCTAssertEqual(attempts, 1)
        XCTAssertEqual(duration, 2, accuracy: 0.001)
        XCTAssertEqual(reason, "tunnel closed")
        if case .queued(_, _, _, _, _, let options)? = recorder.events(of: "t1").first?.payload {
            XCTAssertEqual(options?.origin, "curl")
        } else {
            XCTFail("opens with queued")
        }
    }

    func testACancelledRowSaysWhoAndAFailedOneHowItFailed() {
        let recorder = EventRecorder(EventHub(deliveryDelay: 0))
        var cancelled = ExternalRow(id: "t2", method: "CONNECT", url: "https://a.test:443", headers: [:], origin: nil, events: recorder.hub)
        cancelled.cancelled(by: "monitor", reason: "tunnel closed: 0 bytes")
        cancelled.end(error: nil, reason: "after")
        XCTAssertEqual(recorder.names(of: "t2"), ["queued", "started", "taskCreated", "cancelled", "taskCompleted", "finished"])
        if case .finished(let outcome, _, _, _, let reason)? = recorder.events(of: "t2").last?.payload {
            XCTAssertEqual(outcome, .cancelled)
            XCTAssertEqual(reason, "cancelled by monitor; tunnel closed: 0 bytes")
        }

        var failed = ExternalRow(id: "t3", method: "CONNECT", url: "https://b.test:443", headers: [:], origin: nil, events: recorder.hub)
        failed.end(error: "the client refused the certificate", code: .secureConnectionFailed, reason: "refused")
        XCTAssertEqual(recorder.errors(of: "t3").map(\.code), [URLError.Code.secureConnectionFailed.rawValue])
        if case .finished(let outcome, _, _, _, _)? = recorder.events(of: "t3").last?.payload { XCTAssertEqual(outcome, .failure) }
    }
}
