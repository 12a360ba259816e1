import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import XCTest

/// A server that closes a kept-alive connection when the next request arrives on it
/// (`/drop-reused`): libcurl re-sends such a request on a fresh connection without a word.
/// These tests pin down what reqtop does about it.
final class ConnectionReuseTests: XCTestCase {
    /// Runs one request on a fresh session so the connection is then kept alive, then
    /// `request` on the same connection.
    private func runOnReusedConnection(_ request: URLRequest, server: FaultServer,
                                       options: RequestOptions = RequestOptions(retryPolicy: .never, attemptTimeout: 5))
        -> (RequestOperation, EventRecorder) {
        let queue = RequestQueue(maxConcurrentRequests: 1, session: SharedSession())
        let recorder = EventRecorder(queue.events)
        let warmUp = queue.add(URLRequest(url: server.url("/echo")), options: RequestOptions(retryPolicy: .never))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(warmUp.result?.outcome, .success)
        let operation = queue.add(request, options: options)
        queue.waitUntilAllOperationsAreFinished()
        return (operation, recorder)
    }

    private func post(_ server: FaultServer, bytes: Int = 300, idempotencyKey: String? = nil) -> URLRequest {
        var request = URLRequest(url: server.url("/drop-reused"))
        request.httpMethod = "POST"
        request.httpBody = Data(repeating: 65, count: bytes)
        if let idempotencyKey { request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key") }
        return request
    }

    /// Before: libcurl re-sent the POST's headers without its body on a fresh connection
    /// and waited for an answer until the attempt timed out (60 s here), although the
    /// server had received the first copy whole.
    func testAPostMeetingADeadReusedConnectionIsNotSentAgainAndFailsAsALostConnection() throws {
        let server = try startServer()
        let (operation, recorder) = runOnReusedConnection(post(server), server: server,
                                                          options: RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy(), attemptTimeout: 60))
        let result = try XCTUnwrap(operation.result)
        XCTAssertEqual(result.outcome, .failure)
        XCTAssertEqual(result.attempts.count, 1)
        XCTAssertEqual(result.attempts.first?.failure, .transport(.networkConnectionLost))
        XCTAssertTrue(result.attempts.first?.decision?.contains("POST is not retried") ?? false, "\(String(describing: result.attempts.first?.decision))")
        // The server received the request whole once; the stopped copy never arrived whole.
        XCTAssertEqual(server.counters.hits("/drop-reused"), 1)
        XCTAssertEqual(recorder.names(of: operation.id).filter { $0 == "taskCreated" }.count, 1)
    }

    /// A POST the policy may retry (it carries an Idempotency-Key) is sent again by reqtop,
    /// as its own attempt with its own events, on a fresh connection, with its whole body.
    func testAPostThatMayBeRetriedIsSentAgainAsItsOwnAttemptWithItsBody() throws {
        let server = try startServer()
        let (operation, recorder) = runOnReusedConnection(post(server, bytes: 1_000, idempotencyKey: "k-1"), server: server,
                                                          options: RequestOptions(retryPolicy: quickPolicy(), attemptTimeout: 60))
        let result = try XCTUnwrap(operation.result)
        XCTAssertEqual(result.outcome, .success, String(describing: result.error))
        XCTAssertEqual(result.attempts.map(\.failure), [.transport(.networkConnectionLost), nil])
        XCTAssertEqual(try JSONSerialization.jsonObject(with: result.data) as? [String: Int], ["bodyBytes": 1_000])
        XCTAssertEqual(server.counters.hits("/drop-reused"), 2)
        let names = recorder.names(of: operation.id)
        XCTAssertEqual(names.filter { $0 == "taskCreated" }.count, 2)
        XCTAssertEqual(names.filter { $0 == "retryScheduled" }.count, 1)
    }

    /// A request without a body that is not idempotent (here a POST) never goes out on a
    /// kept-alive connection: before, libcurl sent it twice without a word when the server
    /// dropped the reused connection (the server acted twice, reqtop counted one attempt).
    /// It now goes on a connection of its own (`Connection: close`), so nothing is re-sent:
    /// the server sees it once.
    func testABodilessPostIsNeverSentOnAReusedConnection() throws {
        let server = try startServer()
        var request = URLRequest(url: server.url("/drop-reused"))
        request.httpMethod = "POST"
        XCTAssertTrue(SharedSession.needsFreshConnection(RequestMessage(request)))
        let (operation, recorder) = runOnReusedConnection(request, server: server)
        let result = try XCTUnwrap(operation.result)
        XCTAssertEqual(result.outcome, .success, "a fresh connection: /drop-reused answers")
        XCTAssertEqual(server.counters.hits("/drop-reused"), 1)
        XCTAssertEqual(server.counters.heads("/drop-reused"), 1, "no second copy")
        XCTAssertEqual(recorder.names(of: operation.id).filter { $0 == "taskCreated" }.count, 1)
        // Which requests: no body, not idempotent, no Idempotency-Key.
        var patch = URLRequest(url: server.url("/x"))
        patch.httpMethod = "PATCH"
        XCTAssertTrue(SharedSession.needsFreshConnection(RequestMessage(patch)))
        patch.setValue("k-1", forHTTPHeaderField: "Idempotency-Key")
        XCTAssertFalse(SharedSession.needsFreshConnection(RequestMessage(patch)))
        var withBody = URLRequest(url: server.url("/x"))
        withBody.httpMethod = "POST"
        withBody.httpBody = Data("{}".utf8)
        XCTAssertFalse(SharedSession.needsFreshConnection(RequestMessage(withBody)), "a body: the re-send is stopped where libcurl asks for it")
        XCTAssertFalse(SharedSession.needsFreshConnection(RequestMessage(url: server.url("/x"))), "GET may be re-sent (RFC 9110)")
    }

    /// What libcurl still does on its own: a request without a body (here a GET) that meets
    /// a dead reused connection is sent again on a fresh one, and FoundationNetworking
    /// tells nobody (no delegate callback exists for it). RFC 9110 §9.2.2 allows a client
    /// to do so for idempotent requests; docs/linux-notes.md states the limit. This test pins the
    /// behaviour so that a Foundation that changes it is noticed.
    func testLibcurlStillResendsABodilessGetOnceWithoutTellingAnyone() throws {
        let server = try startServer()
        let (operation, _) = runOnReusedConnection(URLRequest(url: server.url("/drop-reused")), server: server)
        let result = try XCTUnwrap(operation.result)
        XCTAssertEqual(result.outcome, .success)
        XCTAssertEqual(result.attempts.count, 1)
        XCTAssertEqual(server.counters.hits("/drop-reused"), 2)
    }
}
