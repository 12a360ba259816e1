import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOHTTP1
import NIOPosix
import RequestOperations

/// AsyncHTTPClient's and SwiftNIO's errors as the `URLError` codes URLSession gives for the
/// same failures, so one retry policy decides the same on both transports. The message
/// keeps NIO's own words.
public enum NIOErrorMapping {
    public static func urlError(_ error: Error) -> URLError {
        urlError(error, sentClientCertificate: false)
    }

    /// - Parameter sentClientCertificate: whether the client offered a certificate, which
    ///   tells a server's certificate alert about it apart from one asking for it.
    static func urlError(_ error: Error, sentClientCertificate: Bool, tls known: TLSFailure? = nil) -> URLError {
        if let error = error as? URLError { return error }
        if let tls = known ?? NIOTLSFailureReading.failure(error, sentClientCertificate: sentClientCertificate) {
            return URLError(tls.code, userInfo: [NSLocalizedDescriptionKey: "\(tls.summary) (\(words(of: error)))",
                                                 TLSFailure.userInfoKey: tls.rawValue])
        }
        if let client = error as? HTTPClientError, client == .proxyAuthenticationRequired {
            // Said as the proxy said it: a person fixes the credentials, not the network.
            return URLError(.userAuthenticationRequired, userInfo: [
                NSLocalizedDescriptionKey: "the proxy answered 407 Proxy Authentication Required: its user and password (in the proxy URL) are missing or wrong",
            ])
        }
        if let client = error as? HTTPClientError, client == .invalidProxyResponse {
            // AsyncHTTPClient keeps no status: any answer to CONNECT but 200 and 407 (tinyproxy
            // answers wrong credentials with 401).
            return URLError(.badServerResponse, userInfo: [
                NSLocalizedDescriptionKey: "the proxy refused to open a tunnel (its answer to CONNECT was not 200; some proxies answer wrong credentials so) (\(error))",
            ])
        }
        let code = code(for: error)
        let words = isDecompressionLimit(error)
            ? "the decoded answer grew past the NIO transport's limit on how many times its size on the wire it may grow (a decompression bomb?)"
            : "\(TransportError.describe(code)) (\(words(of: error)))"
        var info: [String: Any] = [NSLocalizedDescriptionKey: words]
        if let timeout = timeoutKind(error) { info[TimeoutKind.userInfoKey] = timeout.rawValue }
        return URLError(code, userInfo: info)
    }

    /// `error` as NIO describes it, less where in the source it was raised: BoringSSL's errors
    /// end `at /…/.build/checkouts/swift-nio-ssl/…/handshake.cc:320`, a path of the machine
    /// that built reqtop, which reached 502 bodies, events and recordings.
    static func words(of error: Error) -> String {
        var text = Substring("\(error)")
        var kept = ""
        while let at = text.range(of: " at /") {
            kept += text[..<at.lowerBound]
            // The path runs to `:<line>`; what follows it (a bracket, a comma) is kept.
            var rest = text[at.upperBound...]
            rest = rest.drop { $0 != ":" && $0 != "]" && $0 != ")" && $0 != " " }
            if rest.hasPrefix(":") { rest = rest.dropFirst().drop { $0.isNumber } }
            text = rest
        }
        return withoutNIOsStrayParenthesis(kept + text)
    }

    /// NIO's `IOError` reads `reason: strerror) (errno: N)`, one `)` too many (its
    /// `reasonForError`), which reached 502 bodies as `… Connection refused) (errno: 111))`. A
    /// `)` straight before ` (errno: ` with no `(` since the `: ` before it is that one: left out.
    static func withoutNIOsStrayParenthesis(_ text: String) -> String {
        var out = ""
        var rest = Substring(text)
        while let marker = rest.range(of: ") (errno: ") {
            let before = rest[..<marker.lowerBound]
            let segment = before.range(of: ": ", options: .backwards).map { before[$0.upperBound...] } ?? before
            out += before
            if segment.contains("(") { out += ")" }
            out += " (errno: "
            rest = rest[marker.upperBound...]
        }
        return out + rest
    }

    /// Which limit a timeout from the client or the channel was.
    static func timeoutKind(_ error: Error) -> TimeoutKind? {
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout: return .connect
            case .readTimeout: return .read
            default: return nil
            }
        case let error as ChannelError:
            if case .connectTimeout = error { return .connect }
            return nil
        case let error as NIOConnectionError:
            return error.connectionErrors.contains { if case ChannelError.connectTimeout? = $0.error as? ChannelError { true } else { false } } ? .connect : nil
        default:
            return nil
        }
    }

    /// AsyncHTTPClient's decoder failed. Told by its type's name: naming the type would make
    /// swift-nio-extras a dependency of ours.
    static func isDecompressionError(_ error: Error) -> Bool {
        String(reflecting: type(of: error)).hasSuffix("NIOHTTPDecompression.DecompressionError")
    }

    /// The decoder stopped a body that grew past ``NIOTransport``'s `maxDecodedRatio`
    /// (`DecompressionError.limit`, the one case without a value).
    static func isDecompressionLimit(_ error: Error) -> Bool {
        isDecompressionError(error) && "\(error)" == "limit"
    }

    static func code(for error: Error) -> URLError.Code {
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .cancelled: return .cancelled
            case .readTimeout, .writeTimeout, .connectTimeout, .deadlineExceeded, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout:
                return .timedOut
            case .remoteConnectionClosed: return .networkConnectionLost
            case .invalidURL, .emptyHost, .emptyScheme: return .badURL
            case .redirectLimitReached, .redirectCycleDetected: return .httpTooManyRedirects
            default: return error.description.lowercased().contains("scheme") ? .unsupportedURL : .badServerResponse
            }
        case let error as NIOConnectionError:
            // Every address failed: none resolved, or each refused.
            return error.connectionErrors.isEmpty ? .cannotFindHost : .cannotConnectToHost
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return .cannotConnectToHost
            case ECONNRESET, EPIPE: return .networkConnectionLost
            case ETIMEDOUT: return .timedOut
            default: return .networkConnectionLost
            }
        case let error as ChannelError:
            switch error {
            case .connectTimeout: return .timedOut
            default: return .networkConnectionLost
            }
        case is InvalidResponseStatus:
            return .badServerResponse
        case let error as HTTPParserError:
            // The connection closed before the body its length promised: what URLSession
            // reports as -1005 ("transfer closed with N bytes remaining"), so it is retried alike.
            return error == .invalidEOFState ? .networkConnectionLost : .badServerResponse
        case _ where isDecompressionLimit(error):
            return .dataLengthExceedsMaximum
        case _ where isDecompressionError(error):
            // AsyncHTTPClient's decoder: a body that is not what its Content-Encoding says, as
            // libcurl's CURLE_BAD_CONTENT_ENCODING. Told by its type (naming the type would make
            // swift-nio-extras a dependency of ours).
            return .cannotDecodeContentData
        default:
            let words = "\(error)".lowercased()
            if words.contains("refused") { return .cannotConnectToHost }
            if words.contains("dns") || words.contains("resolve") { return .cannotFindHost }
            return .unknown
        }
    }
}
