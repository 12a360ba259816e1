import Foundation
import RequestOperations

/// Writes events the way ``PackedEvents`` lays them out.
struct PackedFieldWriter: EventFieldWriter {
    private(set) var bytes: [UInt8] = []
    private let context: [String]
    /// Strings written out in full so far, in order: their references follow the known
    /// strings and the context. A pack holds a handful, so a linear search is cheapest.
    private var literals: [String] = []

    init(context: [String]) {
        self.context = context
        bytes.reserveCapacity(512)
    }

    mutating func append(_ event: RequestEvent) {
        withUnsafeBytes(of: event.time.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        varint(zigzag(event.attempt))
        // The schema hands back the name after the fields, so it is written after them.
        let name = event.payload.write(to: &self)
        bytes.append(PackedTag.end.rawValue)
        reference(name)
    }

    mutating func string(_ key: String, _ value: String) {
        field(.string, key)
        reference(value)
    }

    mutating func int(_ key: String, _ value: Int) {
        field(.int, key)
        varint(zigzag(value))
    }

    mutating func double(_ key: String, _ value: Double) {
        field(.double, key)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func headers(_ key: String, _ value: [String: String]) {
        field(.headers, key)
        varint(UInt64(value.count))
        for (name, text) in value {
            reference(name)
            reference(text)
        }
    }

    mutating func bool(_ key: String, _ value: Bool) {
        field(value ? .boolTrue : .boolFalse, key)
    }

    mutating func error(_ key: String, _ value: TransportError?) {
        guard let value else { return field(.noError, key) }
        let kinded = value.tls != nil || value.timeout != nil || value.cancelledByHedge
        field(kinded ? .kindedError : .error, key)
        varint(zigzag(value.code))
        reference(value.message)
        if kinded {
            reference(value.tls?.rawValue ?? "")
            reference(value.timeout?.rawValue ?? "")
            reference(value.cancelledByHedge ? "hedge" : "")
        }
    }

    mutating func null(_ key: String) {
        field(.null, key)
    }

    private mutating func field(_ tag: PackedTag, _ key: String) {
        bytes.append(tag.rawValue)
        reference(key)
    }

    private mutating func reference(_ text: String) {
        // No known string is long: a URL or a reason is not looked up (hashing them was half
        // the time packing took).
        if text.utf8.count <= PackedStrings.longest, let known = PackedStrings.positions[text] { return varint(UInt64(known + 1)) }
        if let index = context.firstIndex(of: text) { return varint(UInt64(PackedStrings.known.count + index + 1)) }
        if let index = literals.firstIndex(of: text) {
            return varint(UInt64(PackedStrings.known.count + context.count + index + 1))
        }
        varint(0)
        varint(UInt64(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
        literals.append(text)
    }

    private mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    private func zigzag(_ value: Int) -> UInt64 {
        UInt64(bitPattern: Int64((value << 1) ^ (value >> (Int.bitWidth - 1))))
    }
}

/// Why packed bytes did not read: only bytes not written by ``PackedEvents`` do that.
public struct PackedEventsError: Error, CustomStringConvertible {
    public let description: String
}

/// Reads events back from ``PackedEvents/bytes``.
struct PackedFieldCursor {
    private let bytes: [UInt8]
    private let context: [String]
    private var literals: [String] = []
    private var position = 0

    init(bytes: [UInt8], context: [String]) {
        self.bytes = bytes
        self.context = context
    }

    var atEnd: Bool { position >= bytes.count }

    mutating func event(operationID: String) throws -> RequestEvent {
        let time = Double(bitPattern: try fixed64())
        let attempt = unzigzag(try varint())
        var fields: [(key: String, value: PackedValue)] = []
        while true {
            guard let tag = PackedTag(rawValue: try byte()) else { throw broken("an unknown tag") }
            if tag == .end { break }
            let key = try string()
            fields.append((key, try value(tag)))
        }
        let name = try string()
        return RequestEvent(time: time, operationID: operationID, attempt: attempt,
                            payload: try RequestEvent.Payload(name: name, fields: PackedFields(fields: fields)))
    }

    private mutating func value(_ tag: PackedTag) throws -> PackedValue {
        switch tag {
        case .string: return .string(try string())
        case .int: return .int(unzigzag(try varint()))
        case .double: return .double(Double(bitPattern: try fixed64()))
        case .headers:
            // Read as bytes came: a count past Int.max must be refused, not trap.
            let count = Int(truncatingIfNeeded: try varint())
            guard count >= 0, count <= bytes.count - position else { throw broken("too many headers") }
            var headers: [String: String] = [:]
            headers.reserveCapacity(count)
            for _ in 0..<count {
                let name = try string()
                headers[name] = try string()
            }
            return .headers(headers)
        case .boolFalse: return .bool(false)
        case .boolTrue: return .bool(true)
        case .noError: return .error(nil)
        case .error:
            let code = unzigzag(try varint())
            return .error(TransportError(code: code, message: try string()))
        case .kindedError:
            let code = unzigzag(try varint())
            let message = try string()
            let tls = TLSFailure(rawValue: try string())
            let timeout = TimeoutKind(rawValue: try string())
            return .error(TransportError(code: code, message: message, tls: tls, timeout: timeout, cancelledByHedge: try string() == "hedge"))
        case .null: return .null
        case .end: throw broken("a field without a value")
        }
    }

    private mutating func string() throws -> String {
        let reference = try varint()
        guard reference > 0 else {
            let length = Int(truncatingIfNeeded: try varint())
            guard length >= 0, length <= bytes.count - position else { throw broken("a string past the end") }
            let text = String(decoding: bytes[position..<position + length], as: UTF8.self)
            position += length
            literals.append(text)
            return text
        }
        // Known strings, then the context, then this pack's literals.
        var index = Int(truncatingIfNeeded: reference - 1)
        guard index >= 0 else { throw broken("a reference to no string") }
        if index < PackedStrings.known.count { return PackedStrings.known[index] }
        index -= PackedStrings.known.count
        if index < context.count { return context[index] }
        index -= context.count
        guard index < literals.count else { throw broken("a reference to no string") }
        return literals[index]
    }

    private mutating func byte() throws -> UInt8 {
        guard position < bytes.count else { throw broken("the end in the middle of an event") }
        defer { position += 1 }
        return bytes[position]
    }

    private mutating func fixed64() throws -> UInt64 {
        guard bytes.count - position >= 8 else { throw broken("the end in the middle of a number") }
        var value: UInt64 = 0
        for shift in 0..<8 { value |= UInt64(bytes[position + shift]) << (8 * shift) }
        position += 8
        return value
    }

    private mutating func varint() throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let next = try byte()
            guard shift < 64 else { throw broken("a number too long") }
            value |= UInt64(next & 0x7F) << shift
            if next & 0x80 == 0 { return value }
            shift += 7
        }
    }

    private func unzigzag(_ value: UInt64) -> Int {
        Int(truncatingIfNeeded: Int64(bitPattern: (value >> 1) ^ (0 &- (value & 1))))
    }

    private func broken(_ what: String) -> PackedEventsError {
        PackedEventsError(description: "packed events: \(what) at byte \(position)")
    }
}

enum PackedValue {
    case string(String), int(Int), double(Double), headers([String: String]), bool(Bool), error(TransportError?), null
}

/// One event's fields, read as the schema asks for them.
struct PackedFields: EventFieldReader {
    let fields: [(key: String, value: PackedValue)]

    private func value(_ key: String) -> PackedValue? {
        fields.first { $0.key == key }?.value
    }

    func string(_ key: String) throws -> String {
        guard case .string(let text)? = value(key) else { throw wrong(key, "a string") }
        return text
    }

    func int(_ key: String) throws -> Int {
        guard case .int(let number)? = value(key) else { throw wrong(key, "an integer") }
        return number
    }

    func double(_ key: String) throws -> Double {
        switch value(key) {
        case .double(let number)?: return number
        case .int(let number)?: return Double(number)
        default: throw wrong(key, "a number")
        }
    }

    func optionalString(_ key: String) -> String? {
        guard case .string(let text)? = value(key) else { return nil }
        return text
    }

    func optionalInt(_ key: String) -> Int? {
        guard case .int(let number)? = value(key) else { return nil }
        return number
    }

    func optionalDouble(_ key: String) -> Double? {
        try? double(key)
    }

    func has(_ key: String) -> Bool {
        value(key) != nil
    }

    func optionalBool(_ key: String) throws -> Bool? {
        guard let found = value(key) else { return nil }
        guard case .bool(let flag) = found else { throw wrong(key, "true or false") }
        return flag
    }

    func bool(_ key: String) throws -> Bool {
        guard case .bool(let flag)? = value(key) else { throw wrong(key, "true or false") }
        return flag
    }

    func headers(_ key: String) -> [String: String] {
        guard case .headers(let headers)? = value(key) else { return [:] }
        return headers
    }

    func error(_ key: String) throws -> TransportError? {
        switch value(key) {
        case nil, .null?: return nil
        case .error(let error)?: return error
        default: throw wrong(key, "an error or null")
        }
    }

    func invalid(_ key: String, expected: String, found: String) -> Error {
        PackedEventsError(description: "packed events: field \"\(key)\": expected \(expected), found \(found)")
    }

    private func wrong(_ key: String, _ expected: String) -> PackedEventsError {
        PackedEventsError(description: "packed events: field \"\(key)\" missing or not \(expected)")
    }
}
