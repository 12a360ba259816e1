import Foundation
import NIOSSL

/// A TLS failure in words a person can act on, from BoringSSL's reason.
enum TLSFailureWords {
    /// The peer's alert, when it refused this side's certificate (BoringSSL's `…ALERT_…`
    /// reasons are alerts received, not decisions of this side); nil for anything else.
    static func peerRefusal(_ error: Error) -> String? {
        let text = String(describing: error)
        guard text.contains("ALERT_") else { return nil }
        let alerts: [(String, String)] = [
            ("ALERT_UNKNOWN_CA", "it is from another authority than the monitor trusts (the monitor's --cacert)"),
            ("ALERT_CERTIFICATE_EXPIRED", "it has expired, by the monitor's clock"),
            ("ALERT_BAD_CERTIFICATE", "the monitor found it bad (not for the address it dialled, or not yet valid)"),
            ("ALERT_CERTIFICATE_UNKNOWN", "the monitor could not verify it"),
            ("ALERT_DECRYPT_ERROR", "its signature does not verify against the authority the monitor trusts"),
        ]
        for (key, words) in alerts where text.contains(key) { return words }
        return nil
    }

    /// `refusedCertificate`: the certificate this side's verification refused, when the
    /// handshake got that far. BoringSSL reports only `CERTIFICATE_VERIFY_FAILED`; the
    /// certificate's dates tell an expired or not-yet-valid one from one whose authority is
    /// another, so the words name the kind, as the other side's alert does.
    static func describe(_ error: Error, refusedCertificate: NIOSSLCertificate? = nil, by side: Side = .program, now: Date = Date()) -> String {
        let text = String(describing: error)
        if text.contains("CERTIFICATE_VERIFY_FAILED"), let certificate = refusedCertificate {
            return verificationKind(of: certificate, by: side, now: now)
        }
        let reasons: [(String, String)] = [
            ("failedToValidateHostname", "the certificate is not for the address dialled (its names and addresses do not include it)"),
            ("serverHostnameImpossibleToMatch", "the certificate is not for the address dialled (its names and addresses do not include it)"),
            ("CERTIFICATE_EXPIRED", "the certificate has expired"),
            ("UNKNOWN_CA", "the certificate is from another authority"),
            ("DECRYPT_ERROR", "the certificate is not from the expected authority (its signature does not verify)"),
            ("CERTIFICATE_REQUIRED", "no client certificate was presented"),
            ("PEER_DID_NOT_RETURN_A_CERTIFICATE", "no client certificate was presented"),
            ("CERTIFICATE_VERIFY_FAILED", "the certificate did not verify (another authority, expired, or not yet valid)"),
            ("BAD_CERTIFICATE", "the certificate was refused"),
            ("WRONG_VERSION_NUMBER", "not TLS (plain text on a TLS port?)"),
            ("HTTP_REQUEST", "not TLS (an HTTP request on a TLS port)"),
            ("eofDuringHandshake", "the peer closed the connection during the handshake"),
            ("EOF during handshake", "the peer closed the connection during the handshake"),
            ("uncleanShutdown", "the connection was cut"),
        ]
        for (key, words) in reasons where text.contains(key) { return words }
        return text.count > 200 ? String(text.prefix(200)) + "…" : text
    }

    /// Why a certificate that did not verify was refused, read off its dates: outside them,
    /// expired or not yet valid (by this side's clock); within them, not signed by an
    /// authority this side trusts.
    static func verificationKind(of certificate: NIOSSLCertificate, by side: Side, now: Date = Date()) -> String {
        let from = Date(timeIntervalSince1970: TimeInterval(certificate.notValidBefore))
        let until = Date(timeIntervalSince1970: TimeInterval(certificate.notValidAfter))
        let day = Date.ISO8601FormatStyle().year().month().day().dateSeparator(.dash)
        if now > until { return "the certificate has expired (on \(until.formatted(day)), by this \(side.rawValue)'s clock)" }
        if now < from { return "the certificate is not valid yet (from \(from.formatted(day)), by this \(side.rawValue)'s clock)" }
        return "the certificate is from another authority than this \(side.rawValue) trusts (\(side.trustFlag))"
    }

    /// Which side refused: the words say whose clock and whose authority.
    enum Side: String {
        case program, monitor

        var trustFlag: String {
            switch self {
            case .program: "its --listen-client-ca"
            case .monitor: "its --cacert"
            }
        }
    }
}
