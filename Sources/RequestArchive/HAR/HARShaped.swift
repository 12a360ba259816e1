import Foundation
import RequestEventFormat

/// A field reqtop does not need to replay an entry (a cookie list, a media type, a size, a
/// time): read when it has HAR 1.2's shape, kept as given otherwise — never a reason to skip
/// the entry. A browser HAR whose `request.cookies` is an object lost 12 of 25 entries to it,
/// and a Polly.JS file whose `postData.mimeType` is an array was refused whole.
enum HARShaped<Value: Decodable & Sendable>: Decodable, Sendable {
    /// As the spec shapes it.
    case spec(Value)
    /// Something else, kept as given (for export) with what it is.
    case other(JSONValue)

    init(from decoder: Decoder) throws {
        if let value = try? Value(from: decoder) {
            self = .spec(value)
        } else {
            self = .other(try JSONValue(from: decoder))
        }
    }

    /// The value when it has the spec's shape.
    var value: Value? {
        if case .spec(let value) = self { value } else { nil }
    }

    /// What it is when it has not the spec's shape ("an object"); nil when it has.
    var otherKind: String? {
        guard case .other(let given) = self else { return nil }
        switch given.value {
        case .string: return "a string"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .null: return nil  // null is as good as absent
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

extension HAREntry {
    /// Each field of this entry that is not as HAR 1.2 shapes it and was read around, by its
    /// path in the entry and what it is instead (`request.cookies`: "an object").
    var otherShapes: [(path: String, found: String)] {
        let fields: [(String, String?)] = [
            ("time", timeAsGiven?.otherKind), ("timings", timingsAsGiven?.otherKind), ("_error", errorAsGiven?.otherKind),
            ("request.cookies", request.cookiesAsGiven?.otherKind),
            ("request.postData.mimeType", request.postData?.mimeTypeAsGiven?.otherKind),
            ("request.postData.encoding", request.postData?.encodingAsGiven?.otherKind),
            ("request.postData.params", request.postData?.paramsAsGiven?.otherKind),
            ("response.cookies", response.cookiesAsGiven?.otherKind), ("response.bodySize", response.bodySizeAsGiven?.otherKind),
            ("response.content.size", response.content?.sizeAsGiven?.otherKind),
            ("response.content.mimeType", response.content?.mimeTypeAsGiven?.otherKind),
            ("response.content.encoding", response.content?.encodingAsGiven?.otherKind),
        ]
        return fields.compactMap { path, found in found.map { (path, $0) } }
    }
}

extension JSONValue {
    /// Cookies in a shape HAR does not give them, with every string but a cookie's name,
    /// path, domain and expiry replaced by the placeholder (a cookie's value is a secret,
    /// whatever object holds it).
    var redactedCookies: JSONValue {
        JSONValue(value: Self.redacted(value, key: nil))
    }

    private static let kept: Set<String> = ["name", "path", "domain", "expires", "httpOnly", "secure", "sameSite"]

    private static func redacted(_ value: Value, key: String?) -> Value {
        switch value {
        case .string: return key.map { kept.contains($0) } == true ? value : .string(Redactor.placeholder)
        case .array(let values): return .array(values.map { redacted($0, key: key) })
        case .object(let members): return .object(Dictionary(uniqueKeysWithValues: members.map { ($0.key, redacted($0.value, key: $0.key)) }))
        case .bool, .number, .null: return value
        }
    }
}
