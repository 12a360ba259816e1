import Foundation
import Synchronization

/// Cookies kept in memory for one queue (RFC 6265, the parts clients use): what a server
/// sets with `Set-Cookie` goes back to it in `Cookie` on the same queue's later requests, on
/// either transport; nothing is written to disk and no other queue sees them.
///
/// Before, the URLSession transport used FoundationNetworking's process-wide storage, which
/// persists to disk, so a service that mixed users' requests on one queue mixed their
/// cookies, and the NIO transport kept none. `RequestQueue(cookies: nil)` keeps none;
/// pass a jar of one's own to share it between queues.
///
/// A request that already has a `Cookie` header is sent as it is. Matching: a cookie with a
/// `Domain` goes to that domain and its subdomains, one without only to the host that set it;
/// `Path` by prefix; `Secure` only over https; an expired one (`Max-Age`, `Expires`) is gone.
public final class CookieJar: Sendable {
    /// One cookie as stored.
    public struct Cookie: Sendable, Equatable {
        public var name: String
        public var value: String
        /// Lower case, without a leading dot.
        public var domain: String
        /// No `Domain` attribute: only the host that set it.
        public var hostOnly: Bool
        public var path: String
        public var secure: Bool
        /// Nil: until the process ends.
        public var expires: Date?
    }

    /// The most kept: past it the oldest go first.
    public static let limit = 3_000

    private let cookies = Mutex<[Cookie]>([])
    private let now: @Sendable () -> Date

    public init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
    }

    /// Nothing kept (expired ones included).
    public var isEmpty: Bool { cookies.withLock { $0.isEmpty } }

    /// Every cookie not expired.
    public var all: [Cookie] {
        let now = now()
        return cookies.withLock { $0.filter { $0.expires.map { $0 > now } ?? true } }
    }

    /// Keeps what `headers` (a response's, duplicates joined with ", ") set for `url`.
    public func store(responseHeaders headers: [String: String], for url: URL) {
        // Both transports file the name as `Set-Cookie` (as HTTPURLResponse does): one lookup
        // per response, not a pass over every header.
        guard let value = headers["Set-Cookie"], let host = url.host?.lowercased(), !host.isEmpty else { return }
        let lines = Self.split(value)
        guard !lines.isEmpty else { return }
        let now = now()
        // RFC 6265bis §5.7: an origin that is not secure may not set a `Secure` cookie, nor
        // replace one that a secure origin set (curl and browsers do the same): anyone on the
        // path of plain http could otherwise plant or overwrite the https session's cookie.
        let secureOrigin = url.scheme?.lowercased() == "https"
        let parsed = lines.compactMap { Self.parse($0, host: host, path: url.path, now: now) }.filter { secureOrigin || !$0.secure }
        cookies.withLock { cookies in
            for cookie in parsed {
                if !secureOrigin, cookies.contains(where: { existing in
                    existing.secure && existing.name == cookie.name
                        && (existing.domain == cookie.domain || existing.domain.hasSuffix("." + cookie.domain) || cookie.domain.hasSuffix("." + existing.domain))
                        && (Self.pathMatches(existing.path, cookie.path) || Self.pathMatches(cookie.path, existing.path))
                }) { continue }
                cookies.removeAll { $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path }
                cookies.append(cookie)
            }
            cookies.removeAll { $0.expires.map { $0 <= now } ?? false }
            if cookies.count > Self.limit { cookies.removeFirst(cookies.count - Self.limit) }
        }
    }

    /// The `Cookie` header for a request to `url`, or nil when no cookie matches.
    public func header(for url: URL) -> String? {
        guard let host = url.host?.lowercased() else { return nil }
        let path = url.path.isEmpty ? "/" : url.path
        let secure = url.scheme?.lowercased() == "https"
        let now = now()
        let matching = cookies.withLock { cookies in
            cookies.filter { cookie in
                (cookie.expires.map { $0 > now } ?? true)
                    && (cookie.hostOnly ? host == cookie.domain : host == cookie.domain || host.hasSuffix("." + cookie.domain))
                    && Self.pathMatches(path, cookie.path)
                    && (!cookie.secure || secure)
            }
        }
        guard !matching.isEmpty else { return nil }
        // Longer paths first, as RFC 6265 asks; otherwise in the order they were set.
        return matching.enumerated().sorted { ($1.element.path.count, $0.offset) < ($0.element.path.count, $1.offset) }
            .map { "\($0.element.name)=\($0.element.value)" }.joined(separator: "; ")
    }

    static func pathMatches(_ path: String, _ cookiePath: String) -> Bool {
        path == cookiePath || path.hasPrefix(cookiePath) && (cookiePath.hasSuffix("/") || path.dropFirst(cookiePath.count).hasPrefix("/"))
    }

    /// Set-Cookie values joined with ", " split again: a comma inside `Expires=Wed, 09 Jun …`
    /// is not a separator.
    static func split(_ joined: String) -> [String] {
        var out: [String] = []
        for piece in joined.components(separatedBy: ",") {
            if let last = out.last, last.range(of: #"expires=[A-Za-z]{3}$"#, options: [.regularExpression, .caseInsensitive]) != nil {
                out[out.count - 1] = last + "," + piece
            } else {
                out.append(piece.trimmingCharacters(in: .whitespaces))
            }
        }
        return out.filter { !$0.isEmpty }
    }

    static func parse(_ line: String, host: String, path requestPath: String, now: Date) -> Cookie? {
        let parts = line.split(separator: ";", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard let pair = parts.first, let equals = pair.firstIndex(of: "=") else { return nil }
        let name = String(pair[..<equals]).trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { return nil }
        var cookie = Cookie(name: name, value: String(pair[pair.index(after: equals)...]), domain: host, hostOnly: true,
                            path: defaultPath(requestPath), secure: false, expires: nil)
        var maxAge: Double?
        for attribute in parts.dropFirst() {
            let (key, value) = attribute.firstIndex(of: "=").map {
                (attribute[..<$0].lowercased(), String(attribute[attribute.index(after: $0)...]))
            } ?? (attribute.lowercased(), "")
            switch key {
            case "domain":
                let domain = value.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "."))
                guard !domain.isEmpty else { continue }
                // A server may set a cookie for itself or a domain above it, never for another;
                // an address only for itself (127.0.0.1 must not set one for "0.0.1"), and no
                // one for a bare top-level name ("com", "localhost").
                if Self.isAddress(host) || !domain.contains(".") {
                    guard domain == host else { return nil }
                } else {
                    guard host == domain || host.hasSuffix("." + domain) else { return nil }
                }
                cookie.domain = domain
                cookie.hostOnly = false
            case "path" where value.hasPrefix("/"): cookie.path = value
            case "secure": cookie.secure = true
            case "max-age": maxAge = Double(value)
            case "expires": cookie.expires = cookie.expires ?? RetryAfter.httpDate(value)  // its guard keeps non-ASCII from DateFormatter
            default: break
            }
        }
        if let maxAge { cookie.expires = now.addingTimeInterval(maxAge) }
        return cookie
    }

    /// An IPv4 or IPv6 address, which domain matching never applies to.
    static func isAddress(_ host: String) -> Bool {
        host.utf8.contains(UInt8(ascii: ":")) || (host.split(separator: ".").count == 4 && host.split(separator: ".").allSatisfy { UInt8($0) != nil })
    }

    /// The directory of the request's path (RFC 6265 5.1.4).
    static func defaultPath(_ path: String) -> String {
        guard path.hasPrefix("/"), let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }
}
