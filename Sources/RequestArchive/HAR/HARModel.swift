import Foundation
import RequestOperations

/// The parts of HAR 1.2 that reqtop reads, as Codable types: `JSONDecoder` loads a large
/// HAR several times faster than `JSONSerialization` on Linux, and skips what is not named.
struct HARFile: Decodable, Sendable {
    let log: HARLog
}

struct HARLog: Decodable, Sendable {
    let entries: [Readable<HAREntry>]
}

/// One element of an array, or why it could not be read: one bad entry no longer rejects a
/// whole file (the others are imported and the bad one is named).
enum Readable<Element: Decodable & Sendable>: Decodable, Sendable {
    case read(Element)
    /// The error, and for a value of the wrong type what the entry holds there instead.
    case unreadable(DecodingError, found: JSONKind?)

    init(from decoder: Decoder) throws {
        do {
            self = .read(try Element(from: decoder))
        } catch let error as DecodingError {
            var found: JSONKind?
            if case .typeMismatch(_, let context) = error {
                found = JSONKind.at(Array(context.codingPath.dropFirst(decoder.codingPath.count)), under: decoder)
            }
            self = .unreadable(error, found: found)
        }
    }
}

struct HAREntry: Decodable, Sendable {
    let startedDateTime: String
    let request: HARRequest
    let response: HARResponse
    let reqtop: HARReqtop?
    // Not needed to replay the entry: read around when not as HAR shapes them (HARShaped).
    let timeAsGiven: HARShaped<Double>?
    let timingsAsGiven: HARShaped<[String: HARShaped<Double>]>?
    let errorAsGiven: HARShaped<String>?

    var time: Double? { timeAsGiven?.value }
    /// The phases given as numbers (a null or a string among them is left out).
    var timings: [String: Double]? { timingsAsGiven?.value?.compactMapValues(\.value) }
    var error: String? { errorAsGiven?.value }

    enum CodingKeys: String, CodingKey {
        case startedDateTime, request, response
        case timeAsGiven = "time"
        case timingsAsGiven = "timings"
        case errorAsGiven = "_error"
        case reqtop = "_reqtop"
    }
}

struct HARRequest: Decodable, Sendable {
    let method: String
    let url: String
    let headers: [HARHeader]?
    let postData: HARPostData?
    /// Read loosely: a cookie is kept for the export, never needed to import the entry.
    let cookiesAsGiven: HARShaped<[JSONValue]>?

    enum CodingKeys: String, CodingKey {
        case method, url, headers, postData
        case cookiesAsGiven = "cookies"
    }
}

/// A request body: `text` (base64 when `encoding` says so, as reqtop writes binary bodies
/// and some tools do), or form `params` when there is no text.
struct HARPostData: Decodable, Sendable {
    let text: String?
    let mimeTypeAsGiven: HARShaped<String>?
    let encodingAsGiven: HARShaped<String>?
    let paramsAsGiven: HARShaped<[HARHeader]>?

    var mimeType: String? { mimeTypeAsGiven?.value }
    var encoding: String? { encodingAsGiven?.value }
    var params: [HARHeader]? { paramsAsGiven?.value }

    enum CodingKeys: String, CodingKey {
        case text
        case mimeTypeAsGiven = "mimeType"
        case encodingAsGiven = "encoding"
        case paramsAsGiven = "params"
    }

    /// The body as it would be sent: whole up to `limit` bytes, else named by size.
    func body(limit: Int) -> RecordedBody? {
        var data: Data?
        if let text {
            data = encoding?.lowercased() == "base64" ? Data(base64Encoded: text) : Data(text.utf8)
            if data == nil { return .omitted(bytes: nil, reason: "its base64 text could not be read") }
        } else if let params, !params.isEmpty {
            var form = URLComponents()
            form.queryItems = params.map { URLQueryItem(name: $0.name, value: $0.value ?? "") }
            data = Data((form.percentEncodedQuery ?? "").utf8)
        }
        return data.flatMap { RecordedBody($0, limit: limit) }
    }
}

struct HARResponse: Decodable, Sendable {
    let status: Double
    let headers: [HARHeader]?
    let content: HARContent?
    let bodySizeAsGiven: HARShaped<Double>?
    let cookiesAsGiven: HARShaped<[JSONValue]>?

    var bodySize: Double? { bodySizeAsGiven?.value }

    enum CodingKeys: String, CodingKey {
        case status, headers, content
        case bodySizeAsGiven = "bodySize"
        case cookiesAsGiven = "cookies"
    }
}

struct HARContent: Decodable, Sendable {
    /// The body as text, or base64 when `encoding` says so (browsers save both ways).
    let text: String?
    let sizeAsGiven: HARShaped<Double>?
    let mimeTypeAsGiven: HARShaped<String>?
    let encodingAsGiven: HARShaped<String>?

    var size: Double? { sizeAsGiven?.value }
    var mimeType: String? { mimeTypeAsGiven?.value }
    var encoding: String? { encodingAsGiven?.value }

    enum CodingKeys: String, CodingKey {
        case text
        case sizeAsGiven = "size"
        case mimeTypeAsGiven = "mimeType"
        case encodingAsGiven = "encoding"
    }

    /// The body's bytes, up to `limit`; nil when none was saved (or base64 that is not).
    func body(limit: Int) -> (data: Data, total: Int)? {
        guard let text, !text.isEmpty else { return nil }
        let data = encoding?.lowercased() == "base64" ? Data(base64Encoded: text, options: .ignoreUnknownCharacters) : Data(text.utf8)
        guard let data else { return nil }
        return (data.count <= limit ? data : Data(data.prefix(limit)), data.count)
    }
}

struct HARHeader: Decodable, Sendable {
    let name: String
    let value: String?
    /// Set when the file gave the value as an array of strings, as some recording tools
    /// write a header with several values: read as that header repeated.
    let multiValued: Bool

    init(name: String, value: String?) {
        (self.name, self.value, self.multiValued) = (name, value, false)
    }

    enum CodingKeys: String, CodingKey { case name, value }

    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        let absent = try !container.contains(.value) || container.decodeNil(forKey: .value)
        if absent {
            (value, multiValued) = (nil, false)
        } else if let values = try? container.decode([String].self, forKey: .value) {
            // Repeated fields joined as the live transports join them (RFC 9110 §5.3).
            (value, multiValued) = (values.joined(separator: ", "), true)
        } else {
            // Anything else is the wrong type: the error names the string HAR requires.
            (value, multiValued) = (try container.decode(String.self, forKey: .value), false)
        }
    }
}

/// reqtop's own data in an entry it wrote.
struct HARReqtop: Decodable, Sendable {
    let events: [JSONValue]?
}

/// Any JSON value, kept as decoded; ``object`` gives what JSONSerialization would give, so
/// reqtop's own events in a HAR are read by the event format's one reader
/// (`EventLog.event(from:)`). Kept as a `Sendable` value so entries can be decoded and
/// checked on several threads.
struct JSONValue: Decodable, Sendable, Equatable {
    indirect enum Value: Sendable, Equatable {
        case string(String), bool(Bool), number(Double), null, array([Value]), object([String: Value])
    }

    let value: Value

    init(value: Value) {
        self.value = value
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Most values in an event are strings: tried first. A boolean before a number, so
        // that `true` stays a boolean.
        if let text = try? container.decode(String.self) {
            value = .string(text)
        } else if let flag = try? container.decode(Bool.self) {
            value = .bool(flag)
        } else if let number = try? container.decode(Double.self) {
            value = .number(number)
        } else if container.decodeNil() {
            value = .null
        } else if let array = try? container.decode([JSONValue].self) {
            value = .array(array.map(\.value))
        } else {
            value = .object(try container.decode([String: JSONValue].self).mapValues(\.value))
        }
    }

    /// As JSONSerialization gives it: `String`, `NSNumber`, `NSNull`, `[Any]`, `[String: Any]`.
    var object: Any { Self.object(value) }

    private static func object(_ value: Value) -> Any {
        switch value {
        case .string(let text): text
        case .bool(let flag): NSNumber(value: flag)
        case .number(let number): NSNumber(value: number)
        case .null: NSNull()
        case .array(let values): values.map(object)
        case .object(let members): members.mapValues(object)
        }
    }
}

/// A `DecodingError` said as a JSON path and what was expected there.
enum HARDecodingError {
    /// What a field should be, by its name, for messages about missing fields.
    private static let expectations: [String: String] = [
        "$": #"a HAR object {"log": {...}}"#, "$.log": #"an object with "entries""#, "$.log.entries": "an array of entries",
        "startedDateTime": "an ISO 8601 date", "method": "a string", "url": "a string", "status": "a number",
        "request": "an object", "response": "an object", "name": "a string",
    ]

    /// - Parameter found: what the document holds where a value of another type was expected.
    static func message(_ error: DecodingError, found: JSONKind?) -> String {
        switch error {
        case .typeMismatch(let type, let context):
            let path = path(context.codingPath)
            return "\(path): expected \(expected(path, type: type)), found \(found?.said ?? "something else")"
        case .keyNotFound(let key, let context):
            let path = path(context.codingPath + [key])
            return "\(path): missing; expected \(expected(path, type: nil))"
        case .valueNotFound(let type, let context):
            let path = path(context.codingPath)
            return "\(path): missing; expected \(expected(path, type: type))"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                let underlying = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
                return "not valid JSON (\(underlying ?? context.debugDescription))"
            }
            return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    static func path(_ codingPath: [CodingKey]) -> String {
        "$" + codingPath.map { key in key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)" }.joined()
    }

    private static func expected(_ path: String, type: Any.Type?) -> String {
        if let known = expectations[path] { return known }
        let last = path.split(separator: ".").last.map(String.init) ?? path
        if let known = expectations[last.replacingOccurrences(of: #"\[\d+\]"#, with: "", options: .regularExpression)] { return known }
        guard let type else { return "a value" }
        switch type {
        case is String.Type: return "a string"
        case is Double.Type, is Int.Type: return "a number"
        case is [Any].Type: return "an array"
        default:
            let name = "\(type)"
            return name.hasPrefix("Array") ? "an array" : name.hasPrefix("Dictionary") ? "an object" : "a value"
        }
    }
}
