import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import RequestTransportNIO
import Testing

/// The operation's timeouts decide how long an attempt may wait, on every transport: the
/// URLSession transport cut every attempt at its own 60 s (the request's and the session's
/// default `timeoutInterval`) whatever the operation allowed. A short session and request
/// timeout stand in for the 60 s here.
@Suite("Transport timeouts follow the operation's", .serialized)
struct TransportTimeoutTests {
    @Test(arguments: TransportKind.allCases)
    func anAttemptMayWaitLongerThanTheSessionsOwnTimeout(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let transport: RequestTransport
        switch kind {
        case .urlsession:
            let configuration = URLSessionConfiguration.default
            configuration.timeoutIntervalForRequest = 1
            transport = SharedSession(configuration: configuration)
        case .nio:
            transport = kind.make()
        }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: transport, earlyRetry: nil)
        var request = URLRequest(url: server.url("/delay/2500"))
        request.timeoutInterval = 1
        let options = RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy(maxAttempts: 1), attemptTimeout: 10)
        let result = try await queue.response(for: request, options: options)
        #expect(result.status == 200)
    }

    /// The operation's own timeout still ends the attempt, at its time, not the transport's.
    @Test(arguments: TransportKind.allCases)
    func theAttemptTimeoutStillEndsAnAttempt(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        let options = RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy(maxAttempts: 1), attemptTimeout: 0.5)
        let began = Date()
        await #expect(throws: RequestError.self) { try await queue.response(for: URLRequest(url: server.url("/hang")), options: options) }
        let waited = Date().timeIntervalSince(began)
        #expect(waited >= 0.45 && waited < 5, "\(waited) s")
    }

    @Test func theTransportsIdleTimeoutIsLongerThanTheOperationAllows() {
        #expect(RequestOperation.transportTimeout(attemptTimeout: 0.5, deadline: 300) == 2)
        #expect(RequestOperation.transportTimeout(attemptTimeout: 200, deadline: 300) == 201)
        #expect(RequestOperation.transportTimeout(attemptTimeout: nil, deadline: 300) == 301)
        #expect(RequestOperation.transportTimeout(attemptTimeout: nil, deadline: nil) == RequestOperation.unlimitedTransportTimeout)
    }
}
