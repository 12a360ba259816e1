import Foundation
import RequestOperations

/// Request bodies, by the same names as query parameters (``Redactor/isSecretParameter``):
///
/// - JSON (a `json` Content-Type, or a text that starts with `{` or `[`): the value of each
///   member so named, nested ones too, becomes `"[redacted]"` — a whole object under
///   `"credentials"` included. Every other byte is kept.
/// - `application/x-www-form-urlencoded`: the pairs, as in a query string.
/// - A JSON body that cannot be followed is left out (`bodyOmitted`), since a secret in it
///   could not be found. Other text and binary bodies are kept as they are.
extension Redactor {
    /// The Content-Type among `headers`, lower-cased.
    static func contentType(_ headers: [String: String]) -> String {
        headers.value(forHTTPHeader: "Content-Type")?.lowercased() ?? ""
    }

    enum BodyKind { case json, form, other }

    static func kind(of text: String, headers: [String: String]) -> BodyKind {
        let type = contentType(headers)
        // Byte comparisons: Foundation's `contains` is a `CFStringFind` on Linux.
        if Redactor.contains(type, "x-www-form-urlencoded") { return .form }
        if Redactor.contains(type, "json") { return .json }
        let first = text.utf8.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        return first == UInt8(ascii: "{") || first == UInt8(ascii: "[") ? .json : .other
    }

    public func redact(body: RecordedBody?, headers: [String: String]) -> RecordedBody? {
        guard case .bytes(let data)? = body, let text = String(data: data, encoding: .utf8) else { return body }
        switch Self.kind(of: text, headers: headers) {
        case .form:
            let redacted = redactPairs(text[...], oauthCode: false)
            return redacted == text ? body : .bytes(Data(redacted.utf8))
        case .json:
            guard let redacted = JSONMemberScanner.replacingValues(in: text, { name, _ in
                isSecretParameter(name, oauthCode: false) ? "\"\(Self.placeholder)\"" : nil
            }) else {
                return .omitted(bytes: data.count, reason: "not JSON reqtop can read, so not recorded in case it holds a secret")
            }
            return redacted == text ? body : .bytes(Data(redacted.utf8))
        case .other:
            return body
        }
    }

    /// The values of the body's secret-named members and pairs, as they would come back in
    /// an answer that echoes the request (unquoted JSON strings, decoded form values).
    /// - Parameter leaves: also each string and number inside a secret member that is an
    ///   object or array (`"credentials": {"token": …}`): what a program may take from it.
    func secretValues(body: RecordedBody?, headers: [String: String], leaves: Bool = false) -> [String] {
        guard case .bytes(let data)? = body, let text = String(data: data, encoding: .utf8) else { return [] }
        var found: [String] = []
        switch Self.kind(of: text, headers: headers) {
        case .form:
            for pair in text.split(whereSeparator: { $0 == "&" || $0 == ";" }) {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, isSecretParameter(String(parts[0]), oauthCode: false) {
                    let value = String(parts[1])
                    found.append(value)
                    if let decoded = value.replacingOccurrences(of: "+", with: " ").removingPercentEncoding { found.append(decoded) }
                }
            }
        case .json:
            _ = JSONMemberScanner.replacingValues(in: text) { name, value in
                if isSecretParameter(name, oauthCode: false) {
                    found.append(value.hasPrefix("\"") && value.hasSuffix("\"") && value.count >= 2 ? String(value.dropFirst().dropLast()) : String(value))
                    if leaves, let parsed = try? JSONSerialization.jsonObject(with: Data(value.utf8), options: [.fragmentsAllowed]) {
                        found += Self.leaves(of: parsed)
                    }
                }
                return nil
            }
        case .other:
            break
        }
        return found
    }

    /// Every string and number in a JSON value.
    private static func leaves(of value: Any) -> [String] {
        switch value {
        case let text as String: [text]
        case let number as NSNumber: ["\(number)"]
        case let object as [String: Any]: object.values.flatMap(leaves(of:))
        case let array as [Any]: array.flatMap(leaves(of:))
        default: []
        }
    }

    /// The names of the body's fields whose values read as redacted (`"[redacted]"` in
    /// JSON, `%5Bredacted%5D` in a form), in order: what a re-send could not send.
    public static func redactedFields(body: Data, headers: [String: String]) -> [String] {
        guard let text = String(data: body, encoding: .utf8) else { return [] }
        var names: [String] = []
        switch kind(of: text, headers: headers) {
        case .form:
            for pair in text.split(whereSeparator: { $0 == "&" || $0 == ";" }) {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[1] == urlPlaceholder { names.append(String(parts[0])) }
            }
        case .json:
            _ = JSONMemberScanner.replacingValues(in: text) { name, value in
                if value == "\"\(placeholder)\"" { names.append(name) }
                return nil
            }
        case .other:
            break
        }
        return names
    }
}
