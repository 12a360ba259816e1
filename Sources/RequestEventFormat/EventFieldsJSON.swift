import Foundation
import HTTPTypes
import RequestOperations

/// Appends an event's fields to a line as `,"key":value` pairs, into one byte buffer.
struct JSONFieldWriter: EventFieldWriter {
    var out = JSONBytes()

    /// `,"key":` (the format's keys need no escaping). The two-byte ends appended a byte at a
    /// time: as buffers they cost more than the key itself, a dozen keys an event (#58).
    private mutating func key(_ key: String) {
        out.bytes.append(UInt8(ascii: ","))
        out.bytes.append(UInt8(ascii: "\""))
        out.raw(text: key)
        out.bytes.append(UInt8(ascii: "\""))
        out.bytes.append(UInt8(ascii: ":"))
    }

    mutating func string(_ key: String, _ value: String) { self.key(key); out.quoted(value) }
    mutating func int(_ key: String, _ value: Int) { self.key(key); out.int(value) }
    mutating func double(_ key: String, _ value: Double) { self.key(key); out.number(value) }
    mutating func headers(_ key: String, _ value: [String: String]) { self.key(key); out.object(value) }
    mutating func null(_ key: String) { self.key(key); out.raw("null") }
    mutating func bool(_ key: String, _ value: Bool) { self.key(key); out.raw(value ? "true" : "false") }

    /// The lines written as they go, each piece escaped as `quoted` would escape the joined
    /// string (the same bytes: no piece ends inside another's UTF-8 sequence).
    mutating func fieldLines(_ key: String, _ value: HTTPFields) {
        self.key(key)
        out.bytes.append(UInt8(ascii: "\""))
        for (index, field) in value.enumerated() {
            if index > 0 { out.raw("\\n") }
            out.escaped(field.name.rawName)
            out.raw(": ")
            out.escaped(field.value)
        }
        out.bytes.append(UInt8(ascii: "\""))
    }

    mutating func error(_ key: String, _ value: TransportError?) {
        guard let value else { return null(key) }
        self.key(key)
        out.raw("{\"code\":")
        out.int(value.code)
        out.raw(",\"message\":")
        out.quoted(value.message)
        if let tls = value.tls {
            out.raw(",\"tls\":")
            out.quoted(tls.rawValue)
        }
        if let timeout = value.timeout {
            out.raw(",\"timeout\":")
            out.quoted(timeout.rawValue)
        }
        if value.cancelledByHedge { out.raw(",\"hedge\":true") }
        out.raw("}")
    }
}

/// Reads an event's fields from a JSON object as JSONSerialization gives it; errors name
/// the line and the field.
struct JSONObjectFields: EventFieldReader {
    let object: [String: Any]
    let line: Int

    private func missing(_ key: String, _ expected: String) -> EventLogError {
        object[key] == nil
            ? EventLogError(line: line, message: "missing field \"\(key)\" (expected \(expected))")
            : EventLogError(line: line, message: "field \"\(key)\": expected \(expected)")
    }

    func invalid(_ key: String, expected: String, found: String) -> Error {
        EventLogError(line: line, message: "field \"\(key)\": expected \(expected), found \(found)")
    }

    func string(_ key: String) throws -> String {
        guard let value = object[key] as? String else { throw missing(key, "a string") }
        return value
    }

    /// Seconds (`t`, `delay`, `duration`), from 0 to ``JSONText/maxSeconds``.
    func double(_ key: String) throws -> Double {
        if let value = JSONText.seconds(object[key]) { return value }
        if let number = object[key] as? NSNumber, !JSONText.isBoolean(number) {
            throw invalid(key, expected: "seconds from 0 to \(Int(JSONText.maxSeconds))", found: "\(number)")
        }
        throw missing(key, "a number")
    }

    func int(_ key: String) throws -> Int {
        guard let value = JSONText.integer(object[key]) else { throw missing(key, "an integer") }
        return value
    }

    func optionalString(_ key: String) -> String? { try? string(key) }
    func optionalInt(_ key: String) -> Int? { try? int(key) }
    func optionalDouble(_ key: String) -> Double? { try? double(key) }

    func has(_ key: String) -> Bool { object[key] != nil }

    func optionalBool(_ key: String) throws -> Bool? {
        guard let value = object[key] else { return nil }
        guard let number = value as? NSNumber, JSONText.isBoolean(number) else { throw invalid(key, expected: "true or false", found: "\(value)") }
        return number.boolValue
    }

    func bool(_ key: String) throws -> Bool {
        guard let value = try optionalBool(key) else { throw missing(key, "true or false") }
        return value
    }

    func headers(_ key: String) -> [String: String] {
        (object[key] as? [String: Any])?.compactMapValues { $0 as? String } ?? [:]
    }

    func error(_ key: String) throws -> TransportError? {
        guard let error = object[key] as? [String: Any] else { return nil }
        return try TransportError(fields: JSONObjectFields(object: error, line: line))
    }
}

extension TransportError {
    /// An error object's members (`code`, `message`, `tls`, `timeout`, `hedge`) as any
    /// reader of the format reads them: one place for the JSON-lines reader and the flat one.
    init<Fields: EventFieldReader>(fields: Fields) throws {
        let code = try fields.int("code"), message = fields.optionalString("message") ?? ""
        self.init(code: code, message: message,
                  tls: fields.optionalString("tls").flatMap(TLSFailure.init(rawValue:)),
                  timeout: fields.optionalString("timeout").flatMap(TimeoutKind.init(rawValue:)),
                  cancelledByHedge: (try fields.optionalBool("hedge")) ?? TransportError.legacyHedge(code: code, message: message))
    }
}
