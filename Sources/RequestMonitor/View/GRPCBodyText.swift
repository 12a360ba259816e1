import Foundation

/// A gRPC call's body as a person reads it: its length-prefixed messages (gRPC's wire format:
/// a compressed flag, a 4-byte big-endian length, the message), each with its size and its
/// fields as `protoc --decode_raw` shows them (field numbers, no names: reqtop has no
/// `.proto`). A message cut at the body cap, or one compressed, is said so and shown as hex.
enum GRPCBodyText {
    /// Whether `mediaType` is gRPC's (`application/grpc`, `application/grpc+proto`, …; not gRPC-Web).
    static func isGRPC(_ mediaType: String?) -> Bool {
        guard let type = mediaType?.lowercased() else { return false }
        return type == "application/grpc" || type.hasPrefix("application/grpc+") || type.hasPrefix("application/grpc;")
    }

    /// gRPC's status codes by name (grpc/doc/statuscodes.md).
    static let codeNames = ["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
                            "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
                            "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"]

    /// `7 PERMISSION_DENIED: no entry for alice` (the message percent-decoded, as gRPC sends it).
    static func status(_ code: Int, message: String?) -> String {
        let name = codeNames.indices.contains(code) ? " " + codeNames[code] : ""
        let text = message.map { $0.removingPercentEncoding ?? $0 }.flatMap { $0.isEmpty ? nil : ": " + $0 } ?? ""
        return "\(code)\(name)\(text)"
    }

    struct Message: Equatable {
        var compressed: Bool
        /// The length the prefix declared.
        var size: Int
        /// The bytes of it that were kept (all, unless cut at the cap).
        var bytes: Data
    }

    /// The messages in `data`, in order; the last one may be cut short.
    static func messages(_ data: Data) -> [Message] {
        let bytes = [UInt8](data)
        var messages: [Message] = []
        var at = 0
        while at + 5 <= bytes.count {
            let size = bytes[at + 1..<at + 5].reduce(0) { $0 << 8 | Int($1) }
            let start = at + 5, end = min(bytes.count, start + size)
            messages.append(Message(compressed: bytes[at] & 1 == 1, size: size, bytes: Data(bytes[start..<end])))
            at = start + size
        }
        return messages
    }

    static func lines(_ data: Data) -> [BodyText.Line] {
        let messages = messages(data)
        let sizes = messages.prefix(8).map { "\($0.size) B" }.joined(separator: ", ") + (messages.count > 8 ? ", …" : "")
        var lines = [BodyText.Line([("gRPC: \(messages.count) message\(messages.count == 1 ? "" : "s") kept (\(sizes)); fields as protoc --decode_raw shows them", .note)])]
        for (index, message) in messages.enumerated() {
            let cut = message.bytes.count < message.size ? " · first \(message.bytes.count) B kept" : ""
            lines.append(BodyText.Line([("message \(index + 1) · \(message.size) B\(message.compressed ? " · compressed" : "")\(cut)", .note)]))
            if !message.compressed, message.bytes.count == message.size, let fields = RawProtobuf.lines(message.bytes) {
                lines += fields.map { BodyText.Line([("  " + $0, .plain)]) }
            } else {
                lines += BodyText.hexDump(message.bytes)
            }
        }
        return lines
    }
}

/// Protocol Buffers' wire format read without a schema, as `protoc --decode_raw` prints it:
/// `1: 150`, `2: "text"`, `3 { … }` for a length-delimited field that reads as a message,
/// fixed widths in hex.
enum RawProtobuf {
    /// The lines of `data` as a message; nil when it is not one (a bad tag, a length past the end).
    static func lines(_ data: Data, depth: Int = 0) -> [String]? {
        var reader = Reader(bytes: [UInt8](data))
        var lines: [String] = []
        while !reader.atEnd {
            guard let tag = reader.varint(), tag >> 3 > 0 else { return nil }
            let field = tag >> 3
            switch tag & 7 {
            case 0:
                guard let value = reader.varint() else { return nil }
                lines.append("\(field): \(value)")
            case 1:
                guard let value = reader.fixed(8) else { return nil }
                lines.append("\(field): 0x" + String(format: "%016llx", value))
            case 5:
                guard let value = reader.fixed(4) else { return nil }
                lines.append("\(field): 0x" + String(format: "%08llx", value))
            case 2:
                // A length past what an Int holds is past the end too (Int(_:) would trap on it).
                guard let length = reader.varint().flatMap({ Int(exactly: $0) }), let bytes = reader.take(length) else { return nil }
                lines += delimited(field: field, bytes, depth: depth)
            default:
                // Groups (3, 4) are long deprecated, and 6, 7 are no wire type.
                return nil
            }
        }
        return lines
    }

    /// A length-delimited field: a message when it reads as one (and is not plain text), else
    /// text when it is printable UTF-8, else escaped bytes.
    private static func delimited(field: UInt64, _ bytes: [UInt8], depth: Int) -> [String] {
        let text = String(bytes: bytes, encoding: .utf8)
        let printable = text.map { $0.unicodeScalars.allSatisfy { $0.value >= 0x20 || $0 == "\n" || $0 == "\t" } } ?? false
        if !bytes.isEmpty, depth < 16, !printable, let nested = lines(Data(bytes), depth: depth + 1) {
            return ["\(field) {"] + nested.map { "  " + $0 } + ["}"]
        }
        if let text, printable {
            return ["\(field): \"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n") + "\""]
        }
        return ["\(field): \"" + bytes.map { (0x20..<0x7F).contains($0) && $0 != 0x22 && $0 != 0x5C ? String(UnicodeScalar($0)) : String(format: "\\%03o", $0) }.joined() + "\""]
    }

    private struct Reader {
        let bytes: [UInt8]
        var at = 0
        var atEnd: Bool { at >= bytes.count }

        mutating func varint() -> UInt64? {
            var value: UInt64 = 0
            for shift in stride(from: 0, to: 64, by: 7) {
                guard at < bytes.count else { return nil }
                let byte = bytes[at]
                at += 1
                value |= UInt64(byte & 0x7F) << UInt64(shift)
                if byte & 0x80 == 0 { return value }
            }
            return nil
        }

        mutating func fixed(_ width: Int) -> UInt64? {
            guard let part = take(width) else { return nil }
            return part.reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }

        mutating func take(_ count: Int) -> [UInt8]? {
            guard count >= 0, count <= bytes.count - at else { return nil }
            defer { at += count }
            return Array(bytes[at..<at + count])
        }
    }
}
