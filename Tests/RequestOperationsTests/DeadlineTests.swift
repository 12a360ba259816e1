import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import XCTest

final class DeadlineTests: XCTestCase {
    func testTheOperationDeadlineEndsAHangingRequest() throws {
        let server = try startServer()
        let queue = makeQueue()
        let start = Date()
        let operation = queue.add(URLRequest(url: server.url("/hang")), options: RequestOptions(deadline: 0.3))
        queue.waitUntilAllOperationsAreFinished()
        let elapsed = Date().timeIntervalSince(start)
        XCTAssert((0.25...2).contains(elapsed), "\(elapsed)")
        XCTAssertEqual(operation.result?.outcome, .failure)
        XCTAssertEqual(operation.result?.error, .deadlineExceeded(0.3))
    }

    func testTheAttemptTimeoutIsPreciseAndRetryable() throws {
        let server = try startServer()
        let queue = makeQueue()
        let start = Date()
        let operation = queue.add(URLRequest(url: server.url("/delay/3000")),
                                  options: RequestOptions(retryPolicy: quickPolicy(maxAttempts: 2), attemptTimeout: 0.2))
        queue.waitUntilAllOperationsAreFinished()
        let elapsed = Date().timeIntervalSince(start)
        // Two attempts of 0.2 s and one 0.05 s wait; URLSession's own timeout would be whole seconds.
        XCTAssert((0.4...1.5).contains(elapsed), "\(elapsed)")
        XCTAssertEqual(operation.attempts.map(\.failure), [.transport(.timedOut), .transport(.timedOut)])
        XCTAssertEqual(operation.result?.error,
                       .retriesExhausted(attempts: 2, last: .transport(TransportError(code: -1001, message: "timed out (attempt timeout)", timeout: .attempt))))
    }
}
