import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import RequestTransportNIO
import Testing

/// Answers no HTTP library would send, on every transport: each ends the operation as a
/// failure, and none takes the process down. (AsyncHTTPClient 1.37.0 trapped on a status
/// below 100 with a body or an end: `ResponseStatusGuard`.)
@Suite("Hostile responses on each transport", .serialized)
struct HostileResponseTests {
    static let cases: [(code: String, body: Int)] = [("000", 5), ("000", 0), ("050", 5), ("099", 5), ("099", 0), ("100", 5), ("150", 5), ("150", 0)]

    @Test(arguments: TransportKind.allCases)
    func aStatusBelow200ThatIsNoInformationalHeadFailsTheRequest(_ kind: TransportKind) async throws {
        let queue = RequestQueue(maxConcurrentRequests: 4, transport: kind.make(), earlyRetry: nil)
        for (code, body) in Self.cases {
            // A server each: five failures in a row would open the host's circuit breaker.
            let server = try FaultServer.start()
            defer { server.stop() }
            let options = RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy(maxAttempts: 1), attemptTimeout: 5)
            do {
                let result = try await queue.response(for: URLRequest(url: server.url("/raw-status/\(code)?body=\(body)")), id: "\(code)-\(body)", options: options)
                Issue.record("\(code) with \(body) bytes succeeded: \(result.status ?? -1)")
            } catch let error as RequestError {
                #expect(error.result.outcome == .failure, "\(code) with \(body) bytes")
                if kind == .nio, Int(code)! < 100 {
                    #expect(error.result.attempts.last?.failure == .transport(.badServerResponse),
                            "\(code): \(String(describing: error.result.attempts.last?.failure))")
                }
            }
        }
        // The transport still works afterwards.
        let server = try FaultServer.start()
        defer { server.stop() }
        let after = try await queue.response(for: URLRequest(url: server.url("/status/200")))
        #expect(after.status == 200)
    }

    /// A redirect to a port past 16 bits (and a request for one) fails the request; on NIO it
    /// took the process down (AsyncHTTPClient traps converting the port).
    @Test(arguments: TransportKind.allCases)
    func aPortPast16BitsFailsTheRequest(_ kind: TransportKind) async throws {
        let queue = RequestQueue(maxConcurrentRequests: 4, transport: kind.make(), earlyRetry: nil)
        let server = try FaultServer.start()
        defer { server.stop() }
        let once = RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy(maxAttempts: 1), attemptTimeout: 5)
        let redirect = server.url("/redirect-to?url=" + "http://127.0.0.1:99999999/".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
        for url in [redirect, URL(string: "http://127.0.0.1:99999999/")!] {
            let failed = try? await queue.response(for: URLRequest(url: url), options: once)
            #expect(failed == nil, "\(url)")
        }
        let after = try await queue.response(for: URLRequest(url: server.url("/status/200")))
        #expect(after.status == 200)
    }
}
