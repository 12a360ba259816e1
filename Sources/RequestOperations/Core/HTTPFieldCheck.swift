import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What may go on the wire as a method or a header field (RFC 9110 §5 and §9).
///
/// FoundationNetworking drops a header whose value holds CR or LF without a word, so a
/// request went out without its `Authorization` and nobody knew. reqtop refuses such a
/// request instead: the operation fails at preparation, naming the header.
public enum HTTPFieldCheck {
    /// `tchar` of RFC 9110 §5.6.2: the characters of a method or a header name.
    private static let tokenCharacters = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)

    /// Whether `text` is a token (a method such as `PROPFIND`, a header name).
    public static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(tokenCharacters.contains)
    }

    /// What is wrong with one header, or nil. Values may not hold CR, LF or NUL (they
    /// would end the field, or the request, early).
    public static func problem(name: String, value: String) -> String? {
        guard isToken(name) else { return "header name \"\(name)\" is not a valid token" }
        return valueProblem(value).map { "header \(name): \($0)" }
    }

    /// What is wrong with a header value, or nil.
    public static func valueProblem(_ value: String) -> String? {
        value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 })
            ? "its value contains a CR, LF or NUL, which would split the header" : nil
    }

    /// The first problem with a request's method or headers, or nil.
    public static func problem(in request: URLRequest) -> String? {
        if let method = request.httpMethod, !isToken(method) { return "method \"\(method)\" is not a valid token" }
        return problem(in: request.allHTTPHeaderFields ?? [:])
    }

    /// The first problem with a message's method, or with a header of the `URLRequest` it
    /// was made from (its fields hold none: `HTTPFields` takes only names that are tokens).
    public static func problem(in message: RequestMessage) -> String? {
        if !isToken(message.method) { return "method \"\(message.method)\" is not a valid token" }
        return message.unsendableHeader
    }

    /// The first problem with one of `headers`, or nil.
    static func problem(in headers: [String: String]) -> String? {
        for (name, value) in headers {
            if let problem = problem(name: name, value: value) { return problem }
        }
        return nil
    }
}
