import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations

/// A plan file: the requests `reqtop run` sends, and how.
///
/// ```json
/// {
///   "maxConcurrent": 4,
///   "timeout": 10,
///   "deadline": 120,
///   "retry": {"maxAttempts": 4, "baseDelay": 0.5, "multiplier": 2, "maxDelay": 10,
///             "jitter": "equal", "retryNonIdempotent": false, "retryBudget": 60},
///   "requests": [
///     {"id": "profile", "url": "https://example.test/me", "headers": {"Accept": "application/json"}},
///     {"id": "upload", "method": "POST", "url": "https://example.test/items", "body": {"name": "x"},
///      "headers": {"Idempotency-Key": "3f1c"}, "retry": {"maxAttempts": 2}, "timeout": 5}
///   ]
/// }
/// ```
struct Plan: Equatable {
    var maxConcurrent: Int
    var requests: [PlannedRequest]

    /// The placeholder that stands for the embedded fault server's base URL.
    static let faultServerPlaceholder = "{{fault}}"

    /// True when some URL names the embedded fault server.
    var usesFaultServer: Bool {
        requests.contains { $0.url.contains(Self.faultServerPlaceholder) }
    }
}

/// One request of a plan, with the plan's defaults already applied.
struct PlannedRequest: Equatable {
    var id: String
    var method: String
    /// May hold ``Plan/faultServerPlaceholder`` until the plan is bound to a server.
    var url: String
    var headers: [String: String]
    var body: Data?
    var retry: RetrySettings
    /// Seconds one attempt may take (`timeout`).
    var attemptTimeout: TimeInterval?
    /// Seconds the whole operation may take (`deadline`).
    var deadline: TimeInterval?

    /// The URLRequest, with the fault server's base URL in place of the placeholder.
    func urlRequest(faultServer: URL?) -> URLRequest {
        var text = url
        if let faultServer {
            text = text.replacingOccurrences(of: Plan.faultServerPlaceholder, with: faultServer.absoluteString)
        }
        var request = URLRequest(url: URL(string: text)!)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        return request
    }
}

/// The `retry` object of a plan, top level or per request.
struct RetrySettings: Equatable {
    var maxAttempts = 3
    var baseDelay: TimeInterval = 0.5
    var multiplier: Double = 2
    var maxDelay: TimeInterval = 30
    var jitter: Jitter = .equal
    var retryNonIdempotent = false
    var retryBudget: TimeInterval? = 60

    var policy: ExponentialBackoffRetryPolicy {
        ExponentialBackoffRetryPolicy(maxAttempts: maxAttempts, baseDelay: baseDelay, multiplier: multiplier, maxDelay: maxDelay,
                                      jitter: jitter, retryNonIdempotent: retryNonIdempotent, retryBudget: retryBudget)
    }
}
