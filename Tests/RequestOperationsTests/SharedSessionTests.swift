import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import XCTest

final class SharedSessionTests: XCTestCase {
    func testFiveHundredConcurrentOperationsEachReceiveExactlyTheirOwnBytes() throws {
        let server = try startServer()
        let session = SharedSession()
        let queue = RequestQueue(maxConcurrentRequests: 500, session: session)
        let operations = (0..<500).map { index in
            queue.add(URLRequest(url: server.url("/bytes/\(512 + index)?seed=\(index)")), options: RequestOptions(retryPolicy: .never))
        }
        queue.waitUntilAllOperationsAreFinished()
        for (index, operation) in operations.enumerated() {
            let result = try XCTUnwrap(operation.result)
            XCTAssertEqual(result.outcome, .success, "\(operation.id): \(String(describing: result.error))")
            XCTAssertEqual(Array(result.data), FaultServer.expectedBytes(count: 512 + index, seed: UInt64(index)), operation.id)
        }
        XCTAssertEqual(session.routedTaskCount, 0)
    }

    func testTheRoutingTableIsEmptyAgainAfterThousandsOfOperations() throws {
        let server = try startServer()
        let session = SharedSession()
        let queue = RequestQueue(maxConcurrentRequests: 16, session: session)
        // Successes, failures, redirects, dropped connections and timeouts all unregister.
        // Redirects next to cancellations also guard the corelibs redirect/cancel race
        // (see `SharedSession.cancel(_:)`): before that fix this test crashed the process.
        let paths = ["/echo", "/status/404", "/redirect/2", "/flaky/x?failures=100000&status=drop", "/redirect/1"]
        var operations: [RequestOperation] = []
        for index in 0..<2_000 {
            let path = index % 25 == 0 ? "/hang" : paths[index % paths.count]
            operations.append(queue.add(URLRequest(url: server.url(path)),
                                        options: RequestOptions(retryPolicy: .never, attemptTimeout: 0.1)))
        }
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operations.filter { $0.result == nil }.count, 0)
        waitFor(2, "the routing table to empty") { session.routedTaskCount == 0 }
        XCTAssertEqual(session.routedTaskCount, 0)
    }

    /// Regression: on Linux a task cancelled while a redirect's completion handler is
    /// pending used to crash the process inside FoundationNetworking. Cancels land at
    /// staggered moments in long redirect chains.
    func testCancellingInTheMiddleOfRedirectChainsDoesNotCrash() throws {
        let server = try startServer()
        let session = SharedSession()
        // No breaker: attempts cut at 1–15 ms time out, which would open it and hold the rest.
        let queue = RequestQueue(maxConcurrentRequests: 32, session: session, circuitBreaker: nil)
        let operations = (0..<600).map { index in
            queue.add(URLRequest(url: server.url("/redirect/20?n=\(index)")),
                      options: RequestOptions(retryPolicy: .never, attemptTimeout: 0.001 * Double(1 + index % 15)))
        }
        queue.waitUntilAllOperationsAreFinished()
        XCTAssert(operations.allSatisfy { $0.result != nil })
        waitFor(5, "the routing table to empty") { session.routedTaskCount == 0 }
    }
}

/// URLSession enforces its own per-host limit (6); the queue's limits must be the ones that count.
final class ConnectionLimitTests: XCTestCase {
    func testAQueueAllowedFiftyToOneHostRunsFiftyAtOnce() throws {
        let server = try startServer()
        let queue = RequestQueue(maxConcurrentRequests: 50, session: SharedSession(), earlyRetry: nil)
        let started = Date()
        let operations = (0..<50).map { queue.add(URLRequest(url: server.url("/delay/1000")), id: "slow-\($0)") }
        queue.waitUntilAllOperationsAreFinished()
        let took = Date().timeIntervalSince(started)
        print("50 one-second requests to one host, 50 allowed at once: \(String(format: "%.2f", took)) s")
        XCTAssert(operations.allSatisfy { $0.result?.outcome == .success })
        // 6 at a time would take 9 s; all at once about 1 s. A wide bound for a loaded machine.
        XCTAssertLessThan(took, 5)
    }

    func testAQueuesPerHostLimitStillHolds() throws {
        let server = try startServer()
        let queue = RequestQueue(maxConcurrentRequests: 50, maxConcurrentRequestsPerHost: 2, session: SharedSession(), earlyRetry: nil)
        let started = Date()
        for index in 0..<6 { queue.add(URLRequest(url: server.url("/delay/300")), id: "two-\(index)") }
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 0.85, "2 at a time: three rounds of 0.3 s")
    }
}
