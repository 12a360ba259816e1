import Foundation

/// Walks a JSON text and lets a caller replace the values of object members by name,
/// keeping every other byte as it was (the redactor's body rule: a body with no secret in
/// it is recorded exactly as sent).
///
/// It checks the text's structure only as far as finding members needs; a text it cannot
/// follow (unbalanced, a string that never ends, nesting deeper than ``maxDepth``) gives nil.
enum JSONMemberScanner {
    static let maxDepth = 512

    /// The text with the value of each member for which `replacement(name, valueText)`
    /// gives a text replaced by it, nested members included; nil when the text is not JSON
    /// it can follow.
    static func replacingValues(in text: String, _ replacement: (_ name: String, _ value: Substring) -> String?) -> String? {
        let bytes = Array(text.utf8)
        var scanner = Scan(bytes: bytes)
        var edits: [(range: Range<Int>, text: String)] = []
        do {
            try scanner.value(depth: 0) { name, range in
                guard let new = replacement(name, Substring(decoding: bytes[range], as: UTF8.self)) else { return }
                // Members are visited after their insides: a replaced value drops the
                // edits made inside it.
                edits.removeAll { range.contains($0.range.lowerBound) }
                edits.append((range, new))
            }
            scanner.skipSpace()
            guard scanner.index == scanner.bytes.count else { return nil }
        } catch {
            return nil
        }
        guard !edits.isEmpty else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(scanner.bytes.count)
        var from = 0
        for edit in edits {
            out += bytes[from..<edit.range.lowerBound]
            out += Array(edit.text.utf8)
            from = edit.range.upperBound
        }
        out += bytes[from...]
        return String(decoding: out, as: UTF8.self)
    }

    private struct NotJSON: Error {}

    private struct Scan {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        /// Reads one value; `member(name, valueRange)` is called after each member's value.
        mutating func value(depth: Int, _ member: (String, Range<Int>) -> Void) throws {
            guard depth < JSONMemberScanner.maxDepth else { throw NotJSON() }
            skipSpace()
            guard index < bytes.count else { throw NotJSON() }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return }
                while true {
                    skipSpace()
                    let name = try string()
                    skipSpace()
                    try expect(":")
                    skipSpace()
                    let start = index
                    try value(depth: depth + 1, member)
                    member(name, start..<index)
                    skipSpace()
                    if try separatorEnds("}") { return }
                }
            case UInt8(ascii: "["):
                index += 1
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return }
                while true {
                    try value(depth: depth + 1, member)
                    skipSpace()
                    if try separatorEnds("]") { return }
                }
            case UInt8(ascii: "\""):
                _ = try string()
            default:
                // A number, true, false or null: up to the next structural byte.
                let start = index
                while index < bytes.count, !",]} \t\r\n".utf8.contains(bytes[index]) { index += 1 }
                guard index > start else { throw NotJSON() }
            }
        }

        /// After a member or element: `,` (more follow) or the closing byte.
        mutating func separatorEnds(_ close: Unicode.Scalar) throws -> Bool {
            guard index < bytes.count else { throw NotJSON() }
            if bytes[index] == UInt8(ascii: ",") { index += 1; return false }
            try expect(close)
            return true
        }

        mutating func expect(_ scalar: Unicode.Scalar) throws {
            guard index < bytes.count, bytes[index] == UInt8(ascii: scalar) else { throw NotJSON() }
            index += 1
        }

        /// A string at `index`, decoded (escapes and all).
        mutating func string() throws -> String {
            try expect("\"")
            let start = index
            var escaped = false
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                if bytes[index] == UInt8(ascii: "\\") { escaped = true; index += 1 }
                index += 1
            }
            guard index < bytes.count else { throw NotJSON() }
            let raw = bytes[start..<index]
            index += 1
            guard escaped else { return String(decoding: raw, as: UTF8.self) }
            let quoted = Data([UInt8(ascii: "\"")] + raw + [UInt8(ascii: "\"")])
            guard let decoded = try? JSONSerialization.jsonObject(with: quoted, options: .fragmentsAllowed) as? String else { throw NotJSON() }
            return decoded
        }
    }
}
