import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which requests a fault rule (or a breakpoint) applies to, in the request terms of the
/// monitor's filter language, which mean the same here as there (``RequestMatch`` `+Terms`):
/// `host:api.example.com` (part of the request's `host:port`: `host:40139` and
/// `host:127.0.0.1:40139` too), `path:/v1/orders` (the path starts with it; `path:orders`
/// holds it), `method:POST`, `header:x-tenant=acme` (a header's value starts with it;
/// `header:x-tenant` any value), a plain word anywhere in the URL; `!` before a term for
/// "not". Every term must hold. Empty: every request.
public struct RequestMatch: Sendable, Equatable, CustomStringConvertible {
    enum Term: Sendable, Equatable {
        case host(String), path(String), method(String), header(name: String, value: String?), word(String)
        indirect case not(Term)
    }

    let terms: [Term]
    /// As written.
    public let description: String

    /// Reads `text`; throws a message naming the term it cannot read.
    public init(_ text: String) throws {
        description = text
        terms = try text.split(separator: " ").map { try Self.term(String($0)) }
    }

    private static func term(_ word: String) throws -> Term {
        if word.count > 1, word.hasPrefix("!") { return .not(try term(String(word.dropFirst()))) }
        guard let colon = word.firstIndex(of: ":"), word[..<colon].allSatisfy(\.isLetter) else { return .word(word.lowercased()) }
        let key = word[..<colon].lowercased(), value = String(word[word.index(after: colon)...])
        guard !value.isEmpty else { throw RequestMatchError("\"\(word)\": nothing after \"\(key):\"") }
        switch key {
        case "host": return .host(value.lowercased())
        case "path": return .path(value)
        case "method": return .method(value.uppercased())
        case "header":
            let parts = value.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return .header(name: String(parts[0]).lowercased(), value: parts.count == 2 ? String(parts[1]) : nil)
        case "http", "https": return .word(word.lowercased())
        default:
            let guess = suggestion(for: key, among: keys).map { " (did you mean \"\($0):\"?)" } ?? ""
            throw RequestMatchError("\"\(key):\" is not a term for requests\(guess); expected host:, path:, method:, header:, a word, or ! before one")
        }
    }

    /// Every request (no term).
    public static let everything = try! RequestMatch("")

    public func matches(_ request: URLRequest) -> Bool {
        matches(RequestMessage(request))
    }

    public func matches(_ request: RequestMessage) -> Bool {
        terms.allSatisfy { Self.holds($0, request) }
    }

    private static func holds(_ term: Term, _ request: RequestMessage) -> Bool {
        switch term {
        case .host(let host):
            guard let name = request.url.host else { return false }
            return Self.host(host, matches: name, port: request.url.port, scheme: request.url.scheme)
        case .path(let text):
            return Self.path(text, matches: request.url.path)
        case .method(let method):
            return request.method.uppercased() == method
        case .header(let name, let value):
            guard let found = request.value(forField: name) else { return false }
            return value.map { found.lowercased().hasPrefix($0.lowercased()) } ?? true
        case .word(let word):
            return request.url.absoluteString.lowercased().contains(word)
        case .not(let inner):
            return !holds(inner, request)
        }
    }
}

/// A match that cannot be read, in words that name the term.
public struct RequestMatchError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}
