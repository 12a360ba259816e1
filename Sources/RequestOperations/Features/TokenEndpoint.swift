import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A ``TokenRefresher`` that POSTs credentials as JSON to a token URL and reads the token
/// from a field of the JSON answer.
///
/// The request runs as an ordinary ``RequestOperation`` on the given queue, so it shows in
/// the monitor and recordings (ids `<name>-N`), is waited for and cancelled with the
/// queue's other operations, but has options of its own: no interceptors, no reactors (the
/// refresh must never wait for itself). A cancelled refresh fails with "cancelled".
public struct TokenEndpoint: TokenRefresher {
    public var url: URL
    public var credentials: [String: String]
    /// The field of the answer that holds the token. Default `token`.
    public var tokenField: String
    public var queue: RequestQueue
    /// Options of the refresh request: its own retries and deadline. Default: 2 attempts, 10 s.
    public var options: RequestOptions
    /// Prefix of the refresh operations' ids.
    public var name: String

    public init(url: URL, credentials: [String: String], tokenField: String = "token", queue: RequestQueue,
                options: RequestOptions = RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy(maxAttempts: 2, baseDelay: 0.2),
                                                         deadline: 10),
                name: String = "token-refresh") {
        self.url = url
        self.credentials = credentials
        self.tokenField = tokenField
        self.queue = queue
        var options = options
        options.interceptors = []
        options.reactors = []
        self.options = options
        self.name = name
    }

    public func refresh(current: String?) async throws -> String {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: credentials, options: [.sortedKeys])
        let id = queue.events.makeOperationID(prefix: name)
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<RequestResult, Never>) in
            let operation = RequestOperation(request: request, id: id, options: options, environment: queue.environment, completion: {
                continuation.resume(returning: $0)
            })
            queue.add(operation)
        }
        if let error = result.error { throw TokenRefreshError(message: "token request failed: \(error)") }
        guard let object = try? JSONSerialization.jsonObject(with: result.data) as? [String: Any],
              let token = object[tokenField] as? String, !token.isEmpty
        else { throw TokenRefreshError(message: "token answer has no string field \"\(tokenField)\"") }
        return token
    }
}

/// Why a ``TokenEndpoint`` refresh failed.
public struct TokenRefreshError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
