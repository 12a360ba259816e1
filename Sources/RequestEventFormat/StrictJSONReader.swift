import Foundation
import RequestOperations

/// Where a JSON file is wrong: the file, the place (a JSON path such as `requests[2].url`),
/// and what was expected there.
public struct StrictJSONError: Error, Equatable, CustomStringConvertible {
    public var file: String
    public var path: String
    public var message: String

    public init(file: String, path: String, message: String) {
        self.file = file
        self.path = path
        self.message = message
    }

    public var description: String {
        path.isEmpty ? "\(file): \(message)" : "\(file): \(path): \(message)"
    }
}

/// Reads fields of a JSON document (as JSONSerialization gives it) strictly: each reader
/// checks the kind and the range, unknown keys are errors with a "did you mean", and every
/// error names the file and the field's place. Used by the plan parser; the HAR importer
/// and the event reader say what they expected in the same words (``describe(_:)``,
/// ``kind(_:)``, ``describe(jsonError:in:)``).
public struct StrictJSONReader: Sendable {
    public let file: String

    public init(file: String) {
        self.file = file
    }


    public func checkKeys(_ object: [String: Any], allowed: Set<String>, at: String) throws {
        for key in object.keys.sorted() where !allowed.contains(key) {
            let path = at.isEmpty ? key : "\(at).\(key)"
            let suggestion = allowed.first { $0.lowercased() == key.lowercased() || Self.closeEnough($0, key) }
            throw StrictJSONError(file: file, path: path, message: "unknown field" + (suggestion.map { " (did you mean \"\($0)\"?)" } ?? "")
                                + "; expected one of \(allowed.sorted().joined(separator: ", "))")
        }
    }

    public func string(_ raw: Any?, at path: String) throws -> String? {
        guard let raw, !(raw is NSNull) else { return nil }
        guard let text = raw as? String else {
            throw StrictJSONError(file: file, path: path, message: "expected a string, found \(Self.describe(raw))")
        }
        return text
    }

    public func number(_ raw: Any?, at path: String) throws -> Double? {
        guard let raw, !(raw is NSNull) else { return nil }
        guard let number = raw as? NSNumber, !JSONText.isBoolean(raw), number.doubleValue.isFinite else {
            throw StrictJSONError(file: file, path: path, message: "expected a number, found \(Self.describe(raw))")
        }
        return number.doubleValue
    }

    public func seconds(_ raw: Any?, at path: String) throws -> TimeInterval? {
        guard let value = try number(raw, at: path) else { return nil }
        guard value >= 0 else {
            throw StrictJSONError(file: file, path: path, message: "\(Self.describe(raw!)) is negative; expected a number of seconds, 0 or more")
        }
        // The same bound as every reader of seconds (JSONText.maxSeconds): a delay of 1e19
        // trapped the engine where it became an Int.
        guard value <= JSONText.maxSeconds else {
            throw StrictJSONError(file: file, path: path,
                                  message: "\(Self.describe(raw!)) is too large; expected a number of seconds up to \(Int(JSONText.maxSeconds))")
        }
        return value
    }

    /// A request's header fields: an object of names to strings, each name an RFC 9110 token
    /// and each value one a request can carry (no line break, no control character). The one
    /// reading of `headers` for a plan's request and for a request edited to be sent again.
    public func headers(_ raw: Any?, at path: String) throws -> [String: String] {
        guard let raw else { return [:] }
        guard let fields = raw as? [String: Any] else {
            throw StrictJSONError(file: file, path: path, message: "expected an object of header names to strings, found \(Self.kind(raw))")
        }
        var headers: [String: String] = [:]
        for (name, value) in fields {
            guard let text = value as? String else {
                throw StrictJSONError(file: file, path: "\(path).\(name)", message: "expected a string, found \(Self.kind(value))")
            }
            guard HTTPFieldCheck.isToken(name) else {
                throw StrictJSONError(file: file, path: path, message: "\"\(name)\" is not a valid header name (RFC 9110 token)")
            }
            if let problem = HTTPFieldCheck.valueProblem(text) {
                throw StrictJSONError(file: file, path: "\(path).\(name)", message: problem)
            }
            headers[name] = text
        }
        return headers
    }

    /// Seconds that limit something (a timeout, a deadline): above 0, as 0 would fail every
    /// request before it started.
    public func timeLimit(_ raw: Any?, at path: String) throws -> TimeInterval? {
        guard let value = try seconds(raw, at: path) else { return nil }
        guard value > 0 else {
            throw StrictJSONError(file: file, path: path,
                                  message: "0 would fail every request at once; expected a number of seconds above 0 (leave it out for the default)")
        }
        return value
    }

    /// The largest whole number JSON carries exactly (2^53 − 1): the most a byte count may be.
    public static let maxExactInteger = (1 << 53) - 1

    /// A whole number from `minimum` to `maximum` (2^31 − 1 unless said: counts and
    /// attempts; sizes in bytes pass ``maxExactInteger``).
    public func integer(_ raw: Any?, at path: String, minimum: Int, maximum: Int = Int(Int32.max)) throws -> Int? {
        guard let value = try number(raw, at: path) else { return nil }
        guard value == value.rounded(), value >= Double(minimum) else {
            throw StrictJSONError(file: file, path: path, message: "expected a whole number of at least \(minimum), found \(Self.describe(raw!))")
        }
        guard value <= Double(maximum) else {
            throw StrictJSONError(file: file, path: path, message: "expected a whole number of at most \(maximum), found \(Self.describe(raw!))")
        }
        return Int(value)
    }

    /// A size in bytes, `minimum` or more, up to ``maxExactInteger``.
    public func byteCount(_ raw: Any?, at path: String, minimum: Int) throws -> Int? {
        try integer(raw, at: path, minimum: minimum, maximum: Self.maxExactInteger)
    }

    // MARK: - Describing values

    public static func kind(_ value: Any) -> String {
        switch value {
        case is NSNull: "null"
        case is String: "a string"
        case _ where JSONText.isBoolean(value): "a boolean"
        case is NSNumber: "a number"
        case is [Any]: "an array"
        case is [String: Any]: "an object"
        default: "\(type(of: value))"
        }
    }

    public static func describe(_ value: Any) -> String {
        switch value {
        case let text as String: "\"\(text)\""
        case _ where JSONText.isBoolean(value): (value as? Bool) == true ? "true" : "false"
        case let number as NSNumber: "\(number)"
        default: kind(value)
        }
    }

    /// JSONSerialization's message, with "around character N" turned into a line and column.
    public static func describe(jsonError error: Error, in data: Data) -> String {
        // Foundation's words often have no place ("unexpected end of file during JSON
        // parse"), or the wrong fault (a lone surrogate called an end of file): our own walk
        // names both.
        if let problem = JSONProblemFinder.find(in: data) { return problem.description }
        let nsError = error as NSError
        var message = (nsError.userInfo[NSDebugDescriptionErrorKey] as? String) ?? nsError.localizedDescription
        if let range = message.range(of: #"around character (\d+)"#, options: .regularExpression),
           let offset = Int(message[range].split(separator: " ").last ?? "") {
            message.replaceSubrange(range, with: "at " + TextPosition.describe(offset: offset, in: data))
        }
        if message.hasSuffix(".") { message.removeLast() }
        return message.prefix(1).lowercased() + message.dropFirst()
    }

    /// One edit apart (a typo), for "did you mean".
    /// One letter added, dropped, changed, or two neighbours swapped (`precent`, `percent`):
    /// the typos a person makes.
    public static func closeEnough(_ a: String, _ b: String) -> Bool {
        let a = Array(a.lowercased()), b = Array(b.lowercased())
        guard abs(a.count - b.count) <= 1 else { return false }
        if a.count == b.count {
            let differing = a.indices.filter { a[$0] != b[$0] }
            if differing.count == 2, differing[1] == differing[0] + 1,
               a[differing[0]] == b[differing[1]], a[differing[1]] == b[differing[0]] { return true }
        }
        var previous = Array(0...b.count)
        for i in 1...max(1, a.count) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count] <= 1
    }
}
