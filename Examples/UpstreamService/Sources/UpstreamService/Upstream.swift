import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations

/// The service's one way out: every upstream call goes through one reqtop queue, with a
/// retry policy, and a bearer token fetched (and refreshed after a 401) by an authenticator.
struct Upstream: Sendable {
    let baseURL: URL
    let queue: RequestQueue
    let authenticated: RequestOptions
    let plain: RequestOptions

    init(baseURL: URL, queue: RequestQueue) {
        self.baseURL = baseURL
        self.queue = queue
        let retry = ExponentialBackoffRetryPolicy(maxAttempts: 4, baseDelay: 0.2, maxDelay: 2, jitter: .equal)
        plain = RequestOptions(retryPolicy: retry, attemptTimeout: 5, deadline: 20)
        let auth = BearerTokenAuthenticator(refresher: TokenEndpoint(url: baseURL.appendingPathComponent("auth/token"),
                                                                     credentials: ["username": "upstream-service", "password": "secret"],
                                                                     queue: queue))
        var authenticated = plain
        auth.install(on: &authenticated)
        self.authenticated = authenticated
    }

    /// What the upstream says of a resource (it needs the bearer token).
    struct Resource: Decodable, Sendable {
        let resource: String
        let user: String
        let id: Int
    }

    func resource(_ name: String) async throws -> Resource {
        try await queue.value(Resource.self, for: URLRequest(url: url("auth/resource/\(name)")), id: queue.events.makeOperationID(prefix: "resource"), options: authenticated)
    }

    /// A call to an upstream that fails `failures` times with 503 before it answers.
    func flaky(_ key: String, failures: Int) async throws -> RequestResult {
        try await queue.response(for: URLRequest(url: url("flaky/\(key)", query: "failures=\(failures)&status=503")), id: queue.events.makeOperationID(prefix: "flaky"), options: plain)
    }

    private func url(_ path: String, query: String? = nil) -> URL {
        var components = URLComponents(url: baseURL.appendingPathComponent(path), resolvingAgainstBaseURL: false)!
        components.percentEncodedQuery = query
        return components.url!
    }
}
