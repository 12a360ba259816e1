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
