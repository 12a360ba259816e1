import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Testing

/// Each queue keeps its own cookies, in memory, on every transport. Before, the URLSession
/// transport used FoundationNetworking's process-wide storage (persisted to disk: a service
/// mixing users' requests on one queue mixed their cookies) and NIO kept none.
@Suite("Cookies per queue on each transport", .serialized)
struct CookieTests {
    private func cookieSent(_ queue: RequestQueue, _ server: FaultServer, path: String = "/echo") async throws -> String? {
        _ = try await queue.response(for: URLRequest(url: server.url(path)))
        return server.counters.requests(path).last?.headers["cookie"]
    }

    @Test(arguments: TransportKind.allCases)
    func aCookieASetsGoesBackOnTheSameQueueOnly(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let alice = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        let bob = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        _ = try await alice.response(for: URLRequest(url: server.url("/set-cookie?name=sid&value=alice-\(kind)")))
        #expect(try await cookieSent(alice, server) == "sid=alice-\(kind)")
        #expect(try await cookieSent(bob, server) == nil, "another queue has its own jar")
        #expect(HTTPCookieStorage.shared.cookies?.contains { $0.value.hasPrefix("alice") } != true, "nothing in the process-wide storage")
        let none = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil, cookies: nil)
        _ = try await none.response(for: URLRequest(url: server.url("/set-cookie?name=sid&value=none")))
        #expect(try await cookieSent(none, server) == nil, "cookies: nil keeps none")
    }

    /// A cookie set on a redirect is sent on the hop it leads to; a Cookie the caller set
    /// is sent as it is.
    @Test(arguments: TransportKind.allCases)
    func aCookieSetOnARedirectGoesWithTheNextHop(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        _ = try await queue.response(for: URLRequest(url: server.url("/set-cookie?name=hop&value=1&redirect=/echo")))
        #expect(server.counters.requests("/echo").last?.headers["cookie"] == "hop=1")
        var own = URLRequest(url: server.url("/echo"))
        own.setValue("mine=2", forHTTPHeaderField: "Cookie")
        _ = try await queue.response(for: own)
        #expect(server.counters.requests("/echo").last?.headers["cookie"] == "mine=2")
    }

    /// Before: a `Secure` cookie set over plain http was kept (and sent on to https).
    /// RFC 6265bis, curl and browsers refuse it, and refuse plain http replacing one.
    @Test(arguments: TransportKind.allCases)
    func aSecureCookieSetOverPlainHTTPIsRefused(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let jar = CookieJar()
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil, cookies: jar)
        _ = try await queue.response(for: URLRequest(url: server.url("/set-cookie?name=sid&value=planted&attrs=%3B%20Secure")))
        _ = try await queue.response(for: URLRequest(url: server.url("/set-cookie?name=plain&value=ok")))
        #expect(jar.all.map(\.name) == ["plain"], "\(jar.all)")
    }

    @Test func plainHTTPCannotReplaceASecureCookie() {
        let jar = CookieJar()
        jar.store(responseHeaders: ["Set-Cookie": "sid=good; Secure; Path=/"], for: URL(string: "https://shop.example/")!)
        jar.store(responseHeaders: ["Set-Cookie": "sid=evil; Path=/"], for: URL(string: "http://shop.example/")!)
        jar.store(responseHeaders: ["Set-Cookie": "sid2=evil; Secure"], for: URL(string: "http://shop.example/")!)
        #expect(jar.header(for: URL(string: "https://shop.example/")!) == "sid=good")
    }

    @Test func matchingFollowsRFC6265() {
        let jar = CookieJar(now: { Date(timeIntervalSince1970: 1_790_000_000) })  // 2026
        let url = URL(string: "https://api.example.com/v1/orders")!
        jar.store(responseHeaders: ["Set-Cookie": "a=1; Path=/, b=2; Domain=example.com; Path=/, c=3; Secure; Path=/v1, "
                                    + "d=4; Expires=Wed, 09 Jun 2021 10:18:14 GMT, e=5; Max-Age=0, f=6; Domain=other.com"], for: url)
        #expect(Set(jar.all.map(\.name)) == ["a", "b", "c"], "expired, and another domain's, are not kept")
        #expect(jar.header(for: URL(string: "https://api.example.com/v1/x")!) == "c=3; a=1; b=2")
        #expect(jar.header(for: URL(string: "https://www.example.com/")!) == "b=2", "a Domain cookie goes to subdomains, a host-only one does not")
        #expect(jar.header(for: URL(string: "http://api.example.com/v1/x")!) == "a=1; b=2", "Secure only over https")
        #expect(jar.header(for: URL(string: "https://api.example.com/v10")!) == "a=1; b=2", "/v1 is no prefix of /v10")
        // A server can set cookies for no one but itself and the domains above it.
        jar.store(responseHeaders: ["Set-Cookie": "ip=1; Domain=0.0.1"], for: URL(string: "http://127.0.0.1/")!)
        jar.store(responseHeaders: ["Set-Cookie": "tld=1; Domain=com"], for: url)
        #expect(jar.header(for: URL(string: "http://10.0.0.1/")!) == nil)
        #expect(!jar.all.contains { $0.name == "ip" || $0.name == "tld" })
        jar.store(responseHeaders: ["Set-Cookie": "g=7"], for: url)
        #expect(jar.header(for: URL(string: "https://api.example.com/")!) == "a=1; b=2", "a cookie with no Path is for its request's directory, /v1")
    }
}
