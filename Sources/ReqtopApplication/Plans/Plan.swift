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
///   "auth": {"tokenURL": "https://example.test/token", "credentials": {"username": "me", "password": "..."}},
///   "batches": {"uploads": {"size": 3, "timeLimit": 2}},
///   "hedge": {"after": 0.2, "max": 1},
///   "requests": [
///     {"id": "profile", "url": "https://example.test/me", "headers": {"Accept": "application/json"}},
///     {"id": "upload", "method": "POST", "url": "https://example.test/items", "body": {"name": "x"},
///      "headers": {"Idempotency-Key": "3f1c"}, "retry": {"maxAttempts": 2}, "timeout": 5, "batch": "uploads"},
///     {"id": "orders", "url": "https://example.test/users/{{profile.id}}/orders", "dependsOn": ["profile"]}
///   ]
/// }
/// ```
package struct Plan: Equatable {
    package var maxConcurrent: Int
    package var maxConcurrentPerHost: Int?
    package var auth: AuthSettings?
    package var batches: [String: BatchSettings] = [:]
    /// In an order where every parent comes before its children.
    package var requests: [PlannedRequest]
    /// What carries the requests (`"transport"`); `--transport` overrides it.
    package var transport: TransportChoice?
    /// Retries per host as a share of its requests (`"retryBudgetPerHost"`); nil: off.
    package var retryBudgetPerHost: RatioRetryBudget.Options? = RatioRetryBudget.Options()
    /// A circuit breaker per host (`"circuitBreaker"`); nil: off.
    package var circuitBreaker: HostCircuitBreaker.Options? = HostCircuitBreaker.Options()
    /// A host's Retry-After (429/503) and rate-limit headers hold every request to it
    /// (`"rateLimitPushback"`); false: only the request answered waits.
    package var rateLimitPushback = true
    /// TLS and proxy settings (`"tls"`, `"proxy"`); the command line's flags win.
    package var connection = PlanConnection()
    /// Bytes of each answer's body the events carry (`"bodyCap"`; 0: none); `--body-cap` wins.
    package var bodyCap: Int?
    /// Failures to inject while the plan runs (`"faults"`), for chaos runs.
    package var faults: [FaultRule] = []

    /// The placeholder that stands for the embedded fault server's base URL.
    package static let faultServerPlaceholder = "{{fault}}"

    /// True when some URL names the embedded fault server.
    package var usesFaultServer: Bool {
        requests.contains { $0.url.contains(Self.faultServerPlaceholder) }
    }
}

/// The plan's `auth` object: a bearer token fetched from `tokenURL` with `credentials`.
package struct AuthSettings: Equatable {
    package var tokenURL: String
    package var credentials: [String: String]
    package var tokenField = "token"
}

/// One entry of the plan's `batches` object.
package struct BatchSettings: Equatable {
    package var size: Int
    package var timeLimit: TimeInterval?
}

/// One request of a plan, with the plan's defaults already applied.
package struct PlannedRequest: Equatable {
    package var id: String
    package var method: String
    /// May hold ``Plan/faultServerPlaceholder`` until the plan is bound to a server.
    package var url: String
    package var headers: [String: String]
    package var body: Data?
    package var retry: RetrySettings
    /// Seconds one attempt may take (`timeout`).
    package var attemptTimeout: TimeInterval?
    /// Seconds the whole operation may take (`deadline`).
    package var deadline: TimeInterval?
    /// Ids of the requests that must succeed first; `{{id.field}}` in the URL, headers or
    /// body takes a value from one's JSON result.
    package var dependsOn: [String] = []
    /// The name of a batch in the plan's `batches`.
    package var batch: String?
    /// Sent with the plan's bearer token (when the plan has `auth`).
    package var auth = false
    package var priority: Operation.QueuePriority = .normal
    /// Hedged reads (`"hedge"`, per request or for all); nil: off.
    package var hedge: HedgePolicy?
    /// Redirects an attempt follows (`"redirects"`: a number, or false for 0).
    package var maxRedirects = 10
    /// Where a successful answer is written as it arrives (`"saveTo"`, relative to the
    /// plan's folder), moved into place only when complete.
    package var saveTo: String?
    /// The most bytes that file may receive (`"maxFileBytes"`; none when absent).
    package var maxFileBytes: Int?
    /// A file sent as the body, read as it is sent (`"bodyFile"`, relative to the plan's folder).
    package var bodyFile: String?
    /// Seconds without a byte before an attempt ends (`"readTimeout"`; `false` at the top: none).
    package var readTimeout: TimeInterval? = RequestOptions.defaultReadTimeout

    /// The URL as text, with the fault server's base URL in place of the placeholder.
    package func urlText(faultServer: URL?) -> String {
        guard let faultServer else { return url }
        return url.replacingOccurrences(of: Plan.faultServerPlaceholder, with: faultServer.absoluteString)
    }

    /// The URLRequest, with the fault server's base URL in place of the placeholder.
    /// Templates of a dependent request stay in it (encoded) until its parents finish.
    package func urlRequest(faultServer: URL?) -> URLRequest {
        let text = urlText(faultServer: faultServer)
        let url = URL(string: text)
            ?? URL(string: text.replacingOccurrences(of: "{", with: "%7B").replacingOccurrences(of: "}", with: "%7D"))
            ?? URL(string: "http://invalid.invalid/")!
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        return request
    }
}

/// The `retry` object of a plan, top level or per request.
/// A plan's `retry`: the engine's retry policy settings (the same fields a recording keeps,
/// `RequestOperations.RetrySettings`, read through as `retry.maxAttempts`, ...) and early retry.
@dynamicMemberLookup
package struct RetrySettings: Equatable {
    package var policySettings = RequestOperations.RetrySettings.defaults
    /// Retry at once when another request to the host succeeds (transport failures only).
    package var earlyRetry = true

    package subscript<Value>(dynamicMember field: WritableKeyPath<RequestOperations.RetrySettings, Value>) -> Value {
        get { policySettings[keyPath: field] }
        set { policySettings[keyPath: field] = newValue }
    }

    package var policy: ExponentialBackoffRetryPolicy { ExponentialBackoffRetryPolicy(policySettings) }
}
