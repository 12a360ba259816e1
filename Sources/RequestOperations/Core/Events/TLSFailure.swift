import Foundation

/// Why a TLS handshake failed, named from the TLS library's own error (NIO: BoringSSL's
/// reason codes and NIOSSL's error types; URLSession on Linux: libcurl's OpenSSL reasons),
/// so a person and a retry policy can tell a certificate problem from a broken handshake.
///
/// Written in the `taskCompleted` event's error object as `tls` (a format addition),
/// with the `URLError` code URLSession uses for the same failure.
public enum TLSFailure: String, Sendable, Equatable, Codable, CaseIterable {
    /// The server's certificate does not lead to a trusted authority.
    case untrusted
    /// The server's certificate's validity ended.
    case expired
    /// The server's certificate is not valid yet.
    case notYetValid = "not-yet-valid"
    /// The server's certificate does not name the host that was asked for.
    case wrongHost = "wrong-host"
    /// The server asked for a client certificate and none was given (`--cert`/`--key`).
    case clientCertificateRequired = "client-certificate-required"
    /// The server refused the client certificate given.
    case clientCertificateRejected = "client-certificate-rejected"
    /// Anything else: no common protocol or cipher, not TLS at all, an alert without a reason.
    case handshakeFailed = "handshake-failed"

    /// The `URLError` code URLSession gives for this failure.
    public var code: URLError.Code {
        switch self {
        case .untrusted, .wrongHost: .serverCertificateUntrusted
        case .expired, .notYetValid: .serverCertificateHasBadDate
        case .clientCertificateRequired: .clientCertificateRequired
        case .clientCertificateRejected: .clientCertificateRejected
        case .handshakeFailed: .secureConnectionFailed
        }
    }

    /// What a person reads.
    public var summary: String {
        switch self {
        case .untrusted: "TLS certificate not trusted (not from a known authority: --cacert adds one)"
        case .expired: "TLS certificate expired"
        case .notYetValid: "TLS certificate not valid yet"
        case .wrongHost: "TLS certificate is for another host name"
        case .clientCertificateRequired: "the server requires a client certificate (--cert and --key)"
        case .clientCertificateRejected: "the server rejected the client certificate"
        case .handshakeFailed: "TLS handshake failed"
        }
    }

    /// The key a transport puts in its `URLError`'s user info to carry the kind.
    public static let userInfoKey = "reqtop.tlsFailure"

    /// The failure libcurl (URLSession on Linux) names in its message: OpenSSL's verify
    /// reasons, which curl passes on word for word (`X509_verify_cert_error_string`), and
    /// curl's own host-name check. The only thing FoundationNetworking hands on.
    static func fromCurlMessage(_ message: String) -> TLSFailure? {
        let lower = message.lowercased()
        if lower.contains("certificate has expired") { return .expired }
        if lower.contains("certificate is not yet valid") { return .notYetValid }
        if lower.contains("no alternative certificate subject name matches")
            || lower.contains("does not match target host name") { return .wrongHost }
        if lower.contains("certificate required") { return .clientCertificateRequired }
        if lower.contains("alert bad certificate") || lower.contains("alert unknown ca") { return .clientCertificateRejected }
        if lower.contains("certificate") { return .untrusted }
        if lower.contains("ssl") || lower.contains("tls") { return .handshakeFailed }
        return nil
    }
}

/// Which limit an attempt ran into, so a person and a retry policy can tell a host that
/// cannot be reached from one that stopped answering or one that was given too little time.
/// Written in the `taskCompleted` event's error object as `timeout` (a format addition), with
/// code -1001 for each.
public enum TimeoutKind: String, Sendable, Equatable, Codable, CaseIterable {
    /// No connection within the transport's connect timeout.
    case connect
    /// No byte for ``RequestOptions/readTimeout`` (reset by every byte that arrives).
    case read
    /// The attempt as a whole ran past ``RequestOptions/attemptTimeout``.
    case attempt

    /// The key a transport puts in its `URLError`'s user info to carry the kind.
    public static let userInfoKey = "reqtop.timeout"

    /// libcurl's words for a connect timeout (URLSession on Linux hands on only its message).
    static func fromCurlMessage(_ message: String) -> TimeoutKind? {
        let lower = message.lowercased()
        if lower.contains("connection timed out") || lower.contains("connect timed out") || lower.contains("failed to connect") && lower.contains("timed out") {
            return .connect
        }
        return nil
    }
}
