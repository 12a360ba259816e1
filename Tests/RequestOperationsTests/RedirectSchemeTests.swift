import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Testing

/// A `Location` that names another scheme and no host, or that cannot be read, on each
/// transport. Before: FoundationNetworking turned `file:///etc/passwd`, `data:` and
/// `javascript:` into a path on the same origin and followed it; a 302 whose `Location` it
/// could not parse ended as a success with no status.
@Suite("Redirects to other schemes and unreadable ones, on each transport", .serialized)
struct RedirectSchemeTests {
    private func redirect(on server: FaultServer, to location: String) -> URL {
        var components = URLComponents(url: server.url("/redirect-to"), resolvingAgainstBaseURL: false)!
        components.queryItems = [URLQueryItem(name: "url", value: location)]
        return components.url!
    }

    @Test(arguments: TransportKind.allCases)
    func aSchemeWithNoHostIsRefusedNotMadeAPath(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        for (index, location) in ["file:///etc/passwd", "data:text/plain,hi", "javascript:alert(1)"].enumerated() {
            let before = server.counters.totalHits
            do {
                let result = try await queue.response(for: URLRequest(url: redirect(on: server, to: location)), id: "r\(index)",
                                                      options: RequestOptions(retryPolicy: .never))
                Issue.record("\(kind) \(location): followed, \(result.status ?? -1)")
            } catch let error as RequestError {
                #expect("\(error)".contains("is not followed (only http and https are)"), "\(kind) \(location): \(error)")
            }
            #expect(server.counters.totalHits == before + 1, "\(kind) \(location): only the redirect itself reached the server")
        }
    }

    /// Redirects not followed (the proxy's policy): the 3xx is the answer, whatever scheme its
    /// `Location` names: nothing is followed, so nothing local is chosen, and the client
    /// (an app waiting for `com.example.app://oauth?code=…`) sees what the server said.
    @Test(arguments: TransportKind.allCases)
    func withRedirectsNotFollowedAnyLocationIsTheAnswer(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        let locations = ["file:///etc/passwd", "com.example.app://oauth?code=abc", "http+unix://%2Fvar%2Frun%2Fx.sock/", "/status/200"]
        for (index, location) in locations.enumerated() {
            let before = server.counters.totalHits
            var options = RequestOptions(retryPolicy: .never, validator: StandardResponseValidator(acceptableStatusCodes: Set(200..<400)))
            options.redirects = .none
            let result = try await queue.response(for: URLRequest(url: redirect(on: server, to: location)), id: "n\(index)", options: options)
            #expect(result.status == 302, "\(kind) \(location)")
            #expect(result.headers.first { $0.key.lowercased() == "location" }?.value == location, "\(kind) \(location)")
            #expect(server.counters.totalHits == before + 1, "\(kind) \(location): only the redirect itself reached the server")
        }
    }

    @Test(arguments: TransportKind.allCases)
    func aRedirectWhoseLocationCannotBeReadFailsWithItsStatus(_ kind: TransportKind) async throws {
        let server = try ResponseFramingTests.RawServer([
            "/bad": "HTTP/1.1 302 Found\r\nLocation: http://[::1\r\nContent-Length: 0\r\n\r\n",
        ])
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        do {
            let result = try await queue.response(for: URLRequest(url: server.url("/bad")), id: "bad", options: RequestOptions(retryPolicy: .never))
            Issue.record("\(kind): a redirect that cannot be followed is no success: \(String(describing: result.status))")
        } catch let error as RequestError {
            // NIO hands on the 302; FoundationNetworking never does, and says nothing: the
            // engine names that it ended without an answer.
            if kind == .nio {
                #expect(error.result.status == 302, "\(kind): \(error)")
            } else {
                #expect("\(error)".contains("without an answer"), "\(kind): \(error)")
            }
        }
    }
}
