import Foundation
import RequestEventFormat

/// What another tool's HAR entry says that the events cannot hold, kept so that exporting
/// the file again gives the same entry: the order of its headers (events hold headers by
/// name) and its cookies (a `Set-Cookie` header's value is redacted whole, its cookie's
/// name and attributes are not secret). Values of cookies are redacted, as a live one's are.
public struct HAREntryShape: Sendable, Equatable {
    /// Header names in the order the entry gave them (each once, as first given).
    public var requestHeaderOrder: [String] = []
    public var responseHeaderOrder: [String] = []
    /// The entry's `cookies`, each `{name, value, …}` with its value redacted.
    public var requestCookies: [Cookie] = []
    public var responseCookies: [Cookie] = []
    /// `cookies` the entry gave in another shape than HAR's array (an object), kept as given
    /// for the export with every value but a name, path, domain or expiry redacted.
    var requestCookiesAsGiven: JSONValue?
    var responseCookiesAsGiven: JSONValue?

    /// What the export writes as a `cookies`: the entry's own shape when it had another.
    func cookiesObject(request: Bool) -> Any {
        if let given = request ? requestCookiesAsGiven : responseCookiesAsGiven { return given.redactedCookies.object }
        return (request ? requestCookies : responseCookies).map(\.object)
    }

    /// One HAR cookie: the fields HAR 1.2 gives it.
    public struct Cookie: Sendable, Equatable {
        public var name: String
        public var path: String?
        public var domain: String?
        public var expires: String?
        public var httpOnly: Bool?
        public var secure: Bool?

        /// As a HAR `cookies` element, its value redacted.
        var object: [String: Any] {
            var fields: [String: Any] = ["name": name, "value": Redactor.placeholder]
            if let path { fields["path"] = path }
            if let domain { fields["domain"] = domain }
            if let expires { fields["expires"] = expires }
            if let httpOnly { fields["httpOnly"] = httpOnly }
            if let secure { fields["secure"] = secure }
            return fields
        }
    }

    init(_ entry: HAREntry) {
        requestHeaderOrder = Self.order(entry.request.headers)
        responseHeaderOrder = Self.order(entry.response.headers)
        requestCookies = Self.cookies(entry.request.cookiesAsGiven?.value)
        responseCookies = Self.cookies(entry.response.cookiesAsGiven?.value)
        if case .other(let given)? = entry.request.cookiesAsGiven { requestCookiesAsGiven = given }
        if case .other(let given)? = entry.response.cookiesAsGiven { responseCookiesAsGiven = given }
    }

    private static func order(_ headers: [HARHeader]?) -> [String] {
        var seen: Set<String> = []
        return (headers ?? []).map(\.name).filter { seen.insert($0.lowercased()).inserted }
    }

    private static func cookies(_ values: [JSONValue]?) -> [Cookie] {
        (values ?? []).compactMap { value in
            guard let object = value.object as? [String: Any], let name = object["name"] as? String else { return nil }
            return Cookie(name: name, path: object["path"] as? String, domain: object["domain"] as? String,
                          expires: object["expires"] as? String, httpOnly: object["httpOnly"] as? Bool, secure: object["secure"] as? Bool)
        }
    }

    /// `headers` as HAR pairs in this order (names it does not know after, by name).
    static func pairs(_ headers: [String: String], order: [String]) -> [[String: String]] {
        let rank = Dictionary(order.enumerated().map { ($0.element.lowercased(), $0.offset) }, uniquingKeysWith: { first, _ in first })
        return headers.sorted { (rank[$0.key.lowercased()] ?? Int.max, $0.key) < (rank[$1.key.lowercased()] ?? Int.max, $1.key) }
            .map { ["name": $0.key, "value": $0.value] }
    }
}
