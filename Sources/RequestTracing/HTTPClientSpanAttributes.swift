import Foundation
import RequestOperations

/// The OpenTelemetry HTTP client semantic conventions (stable, v1.26+) as reqtop fills them:
/// the names, and how a method, a URL and a failure become values of low cardinality.
enum HTTPClientSpanAttributes {
    static let method = "http.request.method"
    static let methodOriginal = "http.request.method_original"
    static let serverAddress = "server.address"
    static let serverPort = "server.port"
    static let urlFull = "url.full"
    static let statusCode = "http.response.status_code"
    static let errorType = "error.type"
    static let resendCount = "http.request.resend_count"

    /// The methods the conventions know; any other is `_OTHER` with the original beside it.
    static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "QUERY"]

    /// `(method, original)`: the method as the conventions want it, and the original when
    /// it is not one they know.
    static func method(_ raw: String) -> (String, String?) {
        knownMethods.contains(raw) ? (raw, nil) : ("_OTHER", raw)
    }
}
