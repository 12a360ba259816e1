import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import XCTest

final class SmokeTests: XCTestCase {
    func testOneRequestSucceeds() throws {
        let server = try startServer()
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let recorder = EventRecorder(queue.events)
        let op = queue.add(URLRequest(url: server.url("/flaky/a?failures=1")), options: RequestOptions(retryPolicy: quickPolicy()))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(op.result?.outcome, .success)
        print(recorder.all.map(EventLog.line(for:)).joined(separator: "\n"))
    }

    func testChallenge() throws {
        let server = try startServer()
        let queue = RequestQueue(maxConcurrentRequests: 2)
        let recorder = EventRecorder(queue.events)
        let op = queue.add(URLRequest(url: server.url("/status/401?www-authenticate=Basic")),
                           options: RequestOptions(retryPolicy: quickPolicy(), deadline: 5))
        queue.waitUntilAllOperationsAreFinished()
        print(recorder.all.map(EventLog.line(for:)).joined(separator: "\n"))
        XCTAssertEqual(op.result?.status, 401)
    }
}
