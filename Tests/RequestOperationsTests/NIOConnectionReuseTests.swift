import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import RequestTransportNIO
import Testing

/// The NIO transport meeting a kept-alive connection the server gave up on (`/drop-reused`
/// closes a connection that already served a request, without answering). URLSession's
/// libcurl re-sends such a request by itself (`ConnectionReuseTests` pins what it does);
/// AsyncHTTPClient must not: every copy the server sees is an attempt reqtop reports, with
/// its own events, and the retry policy alone decides whether a second copy is sent.
@Suite("NIO: a dead reused connection is never re-sent behind our back", .serialized)
struct NIOConnectionReuseTests {
    /// One request to warm the shared client's pool for this server, then `request`, which
    /// goes out on that same kept-alive connection.
    private func runOnReusedConnection(_ request: URLRequest, server: FaultServer, policy: RetryPolicy)
        async -> (RequestOperation, EventRecorder) {
        let queue = RequestQueue(maxConcurrentRequests: 1, transport: NIOTransport.shared, earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let warmUp = queue.add(URLRequest(url: server.url("/echo")), id: "warm-up", options: RequestOptions(retryPolicy: .never))
        #expect(await warmUp.finished.outcome == .success)
        let operation = queue.add(request, id: "reused", options: RequestOptions(retryPolicy: policy, attemptTimeout: 10))
        _ = await operation.finished
        return (operation, recorder)
    }

    private var quick: ExponentialBackoffRetryPolicy {
        ExponentialBackoffRetryPolicy(maxAttempts: 3, baseDelay: 0.05, multiplier: 2, maxDelay: 1, jitter: .none, retryBudget: nil)
    }

    @Test func aGetIsSentAgainOnlyAsItsOwnAttempt() async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let (operation, recorder) = await runOnReusedConnection(URLRequest(url: server.url("/drop-reused")), server: server, policy: quick)
        let result = try #require(operation.result)
        #expect(result.outcome == .success)
        #expect(result.attempts.map(\.failure) == [.transport(.networkConnectionLost), nil])
        // Two copies reached the server, and reqtop reported two attempts, each with its task.
        #expect(server.counters.hits("/drop-reused") == 2)
        #expect(server.counters.heads("/drop-reused") == 2)
        #expect(recorder.names(of: "reused").filter { $0 == "taskCreated" }.count == 2)
        #expect(recorder.names(of: "reused").filter { $0 == "retryScheduled" }.count == 1)
    }

    @Test func aGetThePolicyWillNotRetryReachesTheServerOnce() async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let (operation, _) = await runOnReusedConnection(URLRequest(url: server.url("/drop-reused")), server: server, policy: .never)
        let result = try #require(operation.result)
        #expect(result.outcome == .failure)
        #expect(result.attempts.map(\.failure) == [.transport(.networkConnectionLost)])
        #expect(server.counters.heads("/drop-reused") == 1, "no copy the engine did not ask for")
    }

    @Test func aPostWithoutAnIdempotencyKeyIsNotSentAgain() async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        var post = URLRequest(url: server.url("/drop-reused"))
        post.httpMethod = "POST"
        post.httpBody = Data(repeating: 65, count: 300)
        // The default policy: a POST without an Idempotency-Key is not retried.
        let (operation, _) = await runOnReusedConnection(post, server: server, policy: ExponentialBackoffRetryPolicy(retryBudget: nil))
        let result = try #require(operation.result)
        #expect(result.outcome == .failure)
        #expect(result.attempts.count == 1)
        #expect(result.attempts.first?.failure == .transport(.networkConnectionLost))
        #expect(result.attempts.first?.decision?.contains("POST is not retried") == true, "\(String(describing: result.attempts.first?.decision))")
        #expect(server.counters.hits("/drop-reused") == 1)
        #expect(server.counters.heads("/drop-reused") == 1)
    }
}
