import NIOSSL
import RequestOperations

/// Which `TLSFailure` (RequestOperations') a NIOSSL error is, read from BoringSSL's packed error codes and
/// NIOSSL's error types: never from the words of a message.
public enum NIOTLSFailureReading {
    /// BoringSSL's `ERR_LIB_SSL`: the library a packed code's top byte names.
    private static let sslLibrary: UInt32 = 16

    /// BoringSSL's reason codes (`SSL_R_…` in `ssl.h`) this reading knows.
    private enum Reason: UInt32 {
        case certificateVerifyFailed = 125
        case alertHandshakeFailure = 1040
        case alertBadCertificate = 1042
        case alertCertificateRevoked = 1044
        case alertCertificateExpired = 1045
        case alertCertificateUnknown = 1046
        case alertUnknownCA = 1048
        case alertAccessDenied = 1049
        case alertDecryptError = 1051
        case alertCertificateRequired = 1116
    }

    /// The failure `error` is, or nil when it is no TLS error.
    /// - Parameter sentClientCertificate: whether this client offered a certificate; a
    ///   server's certificate alert then judges it (rejected), and without one it asks for one.
    public static func failure(_ error: Error, sentClientCertificate: Bool) -> TLSFailure? {
        switch error {
        case let error as NIOSSLExtraError:
            return error == .failedToValidateHostname || error == .serverHostnameImpossibleToMatch ? .wrongHost : .handshakeFailed
        case let error as NIOSSLError:
            switch error {
            case .handshakeFailed(let boring), .shutdownFailed(let boring):
                return stackFailure(boring, sentClientCertificate: sentClientCertificate)
            case .uncleanShutdown, .readInInvalidTLSState:
                return .handshakeFailed
            default:
                return .handshakeFailed
            }
        case let error as BoringSSLError:
            return stackFailure(error, sentClientCertificate: sentClientCertificate)
        default:
            return nil
        }
    }

    /// Whether `error` is BoringSSL refusing the server's certificate chain (which it does
    /// not say more of: ``ServerCertificateDates`` reads the dates to tell expiry apart).
    static func isChainRefused(_ error: Error) -> Bool {
        guard let error = error as? NIOSSLError, case .handshakeFailed(let boring) = error else { return false }
        return reasons(boring).contains(.certificateVerifyFailed)
    }

    private static func stackFailure(_ error: BoringSSLError, sentClientCertificate: Bool) -> TLSFailure {
        let reasons = reasons(error)
        if reasons.contains(.certificateVerifyFailed) { return .untrusted }
        if reasons.contains(.alertCertificateRequired) { return .clientCertificateRequired }
        let judgedOurs: Set<Reason> = [.alertBadCertificate, .alertCertificateRevoked, .alertCertificateExpired,
                                       .alertCertificateUnknown, .alertUnknownCA, .alertAccessDenied]
        if !judgedOurs.isDisjoint(with: reasons) {
            return sentClientCertificate ? .clientCertificateRejected : .clientCertificateRequired
        }
        // TLS 1.2 servers that require a certificate answer one that is missing with a bare
        // handshake_failure alert.
        if reasons.contains(.alertHandshakeFailure), !sentClientCertificate { return .clientCertificateRequired }
        // A BoringSSL server (NIOSSL's) whose check of the client's chain fails answers
        // decrypt_error after the client's Finished (TLS 1.3): seen in the mTLS test.
        if reasons.contains(.alertDecryptError), sentClientCertificate { return .clientCertificateRejected }
        return .handshakeFailed
    }

    /// The SSL library's reasons on BoringSSL's error stack. NIOSSL keeps the packed code
    /// private and prints it first in each entry's description ("Error: 268435581 error:…").
    private static func reasons(_ error: BoringSSLError) -> Set<Reason> {
        let stack: NIOBoringSSLErrorStack
        switch error {
        case .sslError(let entries), .unknownError(let entries): stack = entries
        default: return []
        }
        var reasons = Set<Reason>()
        for entry in stack {
            let text = entry.description
            guard text.hasPrefix("Error: ") else { continue }
            let digits = text.dropFirst(7).prefix { $0.isNumber }
            guard let packed = UInt32(digits), packed >> 24 == sslLibrary, let reason = Reason(rawValue: packed & 0xFFF) else { continue }
            reasons.insert(reason)
        }
        return reasons
    }
}
