import Foundation

extension TransportError {
    /// A short name for the kind of failure, of low cardinality (never the message): what
    /// OpenTelemetry's `error.type` and metric dimensions want. `_OTHER` for codes without one.
    public var kind: String {
        switch URLError.Code(rawValue: code) {
        case .timedOut: "timeout"
        case .cannotConnectToHost: "connection_refused"
        case .networkConnectionLost: "connection_lost"
        case .cannotFindHost, .dnsLookupFailed: "host_not_found"
        case .badServerResponse: "bad_server_response"
        case .cancelled: "cancelled"
        case .secureConnectionFailed: "tls_failure"
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot:
            "tls_certificate"
        case .clientCertificateRequired, .clientCertificateRejected: "tls_client_certificate"
        case .notConnectedToInternet: "not_connected"
        case .badURL, .unsupportedURL: "bad_url"
        default: "_OTHER"
        }
    }
}
