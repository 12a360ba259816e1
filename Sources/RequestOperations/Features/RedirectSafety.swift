import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The request headers that carry a credential: the one list the engine drops on a redirect
/// to another origin and `RequestEventFormat`'s `Redactor` redacts by default.
///
/// A header is a credential when its name (any case) is one of ``names`` or contains one of
/// ``words`` (`X-Api-Key`, `X-Auth-Token`, `X-Amz-Security-Token`).
public enum CredentialHeaders {
    /// Names that are credentials whatever they hold (lower case).
    public static let names: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]
    /// Words that make any header (or parameter) name a credential wherever they appear in it.
    public static let words: [String] = ["token", "secret", "password", "passwd", "signature", "credential", "session",
                                         "api-key", "api_key", "apikey"]

    public static func contains(_ name: String) -> Bool {
        let lower = name.lowercased()
        return names.contains(lower) || words.contains { lower.contains($0) }
    }
}

/// A URL's scheme, host and port: credentials are meant for one origin, and a redirect to
/// any other (a change of scheme, host or port, as curl, browsers and AsyncHTTPClient judge
/// it) must not carry them.
struct Origin: Equatable {
    let scheme: String
    let host: String
    let port: Int?

    init?(_ url: URL?) {
        guard let url, let scheme = url.scheme?.lowercased() else { return nil }
        self.scheme = scheme
        host = (url.host ?? "").lowercased()
        port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil)
    }
}

/// What the engine makes of a redirect before any transport follows it; one policy for every
/// transport, applied in ``RequestOperation/task(_:willRedirect:to:)``.
///
/// - Only `http` and `https` are followed: a `Location` naming another scheme
///   (`http+unix://` reaches a local socket on AsyncHTTPClient, `file:`, `ftp:`) is refused,
///   and the attempt fails. A server's answer never chooses a local resource.
/// - On a change of origin every credential header (``CredentialHeaders``) is dropped, and
///   the `redirect` event names them; a `Host` field is dropped too, for the transport to
///   write the new origin's.
/// - A 307 or 308 must send the same body again: a body given as a stream (`httpBodyStream`,
///   read once) cannot be, nor can any body on a transport that leaves it out
///   (FoundationNetworking), so the attempt ends with -1021 and that reason, never with an
///   empty body sent in its place.
enum RedirectSafety {
    static let followedSchemes: Set<String> = ["http", "https"]

    enum Verdict {
        /// Follow `request`, from which the credentials named in `dropped` were taken.
        case follow(RequestMessage, dropped: [String])
        /// Do not follow; the attempt fails with `code` and `reason`.
        case refuse(code: URLError.Code, reason: String)
    }

    /// - Parameters:
    ///   - next: the request the transport would send next.
    ///   - original: the URL the attempt sent first, whose origin its credentials are for.
    ///   - status: the redirect's status.
    ///   - streamedBody: whether the attempt's body was a stream, which cannot be read twice.
    ///   - bodyLost: whether the attempt had a body the transport would not send again.
    ///   - location: the `Location` header as the server wrote it. FoundationNetworking
    ///     resolves `file:///etc/passwd`, `data:` or `javascript:` (a scheme and no host) into
    ///     a path on the same origin and hands over that; the scheme the server named decides.
    static func judge(_ next: RequestMessage, original: URL?, status: Int = 302, location: String? = nil,
                      streamedBody: Bool = false, bodyLost: Bool = false) -> Verdict {
        if let named = location.flatMap(scheme(of:)), !followedSchemes.contains(named) {
            return .refuse(code: .unsupportedURL, reason: "redirect to a \(named): URL is not followed (only http and https are)")
        }
        let scheme = next.url.scheme?.lowercased() ?? ""
        guard followedSchemes.contains(scheme) else {
            return .refuse(code: .unsupportedURL, reason: "redirect to a \(scheme.isEmpty ? "URL without a scheme" : "\(scheme): URL") is not followed (only http and https are)")
        }
        if (status == 307 || status == 308) && streamedBody {
            return .refuse(code: .requestBodyStreamExhausted,
                           reason: "a \(status) redirect must send the body again, and this request's body is a stream that cannot be read twice")
        }
        if (status == 307 || status == 308) && bodyLost {
            return .refuse(code: .requestBodyStreamExhausted,
                           reason: "a \(status) redirect must send the body again, and this transport would send it empty (use --transport nio)")
        }
        guard let target = Origin(next.url), target != Origin(original) else { return .follow(next, dropped: []) }
        var request = next
        // A `Host` field named the first origin (or a virtual host on it): the transport writes
        // the new one's, as curl does with a `Host` of one's own.
        request.headerFields[.hostField] = nil
        let credentials = Set(next.headerFields.lazy.map(\.name).filter { CredentialHeaders.contains($0.canonicalName) })
        for name in credentials { request.headerFields[name] = nil }
        return .follow(request, dropped: credentials.map(\.canonicalName).sorted())
    }

    /// The scheme a reference names (RFC 3986 §3.1: a letter, then letters, digits, `+`,
    /// `-` or `.`, then `:`), lower-cased; nil for a relative reference.
    static func scheme(of reference: String) -> String? {
        let trimmed = reference.trimmingCharacters(in: .whitespaces)
        guard let colon = trimmed.firstIndex(of: ":"), colon > trimmed.startIndex else { return nil }
        let name = trimmed[..<colon]
        guard name.first!.isASCII, name.first!.isLetter,
              name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }) else { return nil }
        return name.lowercased()
    }
}

/// How many redirects an attempt follows, and whether one may go from https to http. The
/// engine applies it on every transport, after `RedirectSafety` (which never lets a
/// redirect leave http/https nor carry credentials to another origin).
///
/// ```swift
/// RequestOptions(redirects: .follow(max: 5))
/// RequestOptions(redirects: .none)              // the 3xx is the answer (judged by the validator)
/// RequestOptions(redirects: RedirectPolicy(max: 10) { response, next in
///     next.url?.host == "api.example.com" ? next : nil    // nil: stop here, the 3xx is the answer
/// })
/// ```
public struct RedirectPolicy: Sendable {
    /// Redirects an attempt follows; past them it fails with -1007 (too many redirects).
    /// 0: none is followed and the 3xx is the answer.
    public var max: Int
    /// Whether a redirect from https to http is followed (refused by default: the rest of
    /// the exchange would go in the clear).
    public var allowsDowngrade: Bool
    /// Asked of each redirect the policy would follow: the request to send (changed or not),
    /// or nil to stop and take the 3xx as the answer.
    public var decide: (@Sendable (HTTPURLResponse, URLRequest) -> URLRequest?)?

    public init(max: Int = 10, allowsDowngrade: Bool = false, decide: (@Sendable (HTTPURLResponse, URLRequest) -> URLRequest?)? = nil) {
        self.max = Swift.max(0, max)
        self.allowsDowngrade = allowsDowngrade
        self.decide = decide
    }

    /// Up to `max` redirects (10 by default, as browsers and curl's `-L` allow 20 and 50).
    public static func follow(max: Int = 10, allowsDowngrade: Bool = false) -> RedirectPolicy {
        RedirectPolicy(max: max, allowsDowngrade: allowsDowngrade)
    }

    /// No redirect is followed: the 3xx is the answer, wherever its `Location` points (being
    /// followed nowhere, a `file:` or an app's own scheme is passed on, not refused).
    public static let none = RedirectPolicy(max: 0)

    /// What the policy makes of the `number`th redirect of an attempt (from 1), from `from`.
    enum Verdict: Equatable {
        case follow
        /// Take the 3xx as the answer.
        case stop
        /// Fail the attempt: the code and why.
        case fail(URLError.Code, String)
    }

    /// No redirect is followed: whatever a 3xx points at, it is the answer.
    var followsNone: Bool { max == 0 }

    /// The `refused` of a `redirect` event whose 3xx is the answer because the policy follows
    /// none (the proxy's): the client gets it as sent. A reader can tell it from a refusal
    /// that failed the attempt (`-1002`, too many, a downgrade) by this text.
    public static let notFollowed = "redirects are not followed"

    func judge(number: Int, from: URL?, to: URL?) -> Verdict {
        guard !followsNone else { return .stop }
        guard number <= max else { return .fail(.httpTooManyRedirects, "more than \(max) redirects") }
        if !allowsDowngrade, from?.scheme?.lowercased() == "https", to?.scheme?.lowercased() == "http" {
            return .fail(.unsupportedURL, "redirect from https to http refused (the request does not allow it)")
        }
        return .follow
    }
}
