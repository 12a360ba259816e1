import Foundation

/// The first place a document is not JSON, and what is wrong there, for error messages.
///
/// Foundation's parser often says only "unexpected end of file during JSON parse" with no
/// place (a torn file, an unclosed string), and says the same of a lone UTF-16 surrogate
/// (`"\ud800"`) in an intact file. This walks the bytes once (only after a parser refused
/// them, so speed does not matter) and names line, column and the fault in words.
public enum JSONProblemFinder {
    public struct Problem: Equatable, CustomStringConvertible {
        public var line: Int
        public var column: Int
        public var message: String

        public var description: String { "\(message) at line \(line), column \(column)" }
    }

    /// Foundation's own nesting limit: a 513th level is refused.
    public static let maxDepth = 512

    /// The first problem in `data`, or nil when it is JSON (RFC 8259: one value, UTF-8).
    public static func find(in data: Data) -> Problem? {
        var walker = Walker(bytes: Array(data))
        return walker.document()
    }

    private struct Walker {
        let bytes: [UInt8]
        var position = 0
        var depth = 0

        init(bytes: [UInt8]) {
            self.bytes = bytes
            // A byte-order mark is allowed before the document.
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        }

        func problem(_ message: String, at offset: Int? = nil) -> Problem {
            let (line, column) = TextPosition.lineAndColumn(of: min(offset ?? position, bytes.count), in: bytes)
            return Problem(line: line, column: column, message: message)
        }

        mutating func skipSpace() {
            while position < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[position]) { position += 1 }
        }

        var endMessage: String { "the document ends before its value is complete" }

        mutating func document() -> Problem? {
            skipSpace()
            guard position < bytes.count else { return problem("the document is empty") }
            if let problem = value() { return problem }
            skipSpace()
            guard position == bytes.count else { return problem("more after the end of the document (\(found))") }
            return nil
        }

        var found: String {
            guard position < bytes.count else { return "the end" }
            let byte = bytes[position]
            return (0x21...0x7E).contains(byte) ? "'\(Character(UnicodeScalar(byte)))'" : String(format: "byte 0x%02X", byte)
        }

        mutating func value() -> Problem? {
            skipSpace()
            guard position < bytes.count else { return problem(endMessage) }
            switch bytes[position] {
            case UInt8(ascii: "{"): return container(close: UInt8(ascii: "}"), isObject: true)
            case UInt8(ascii: "["): return container(close: UInt8(ascii: "]"), isObject: false)
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
            default: return problem("expected a value, found \(found)")
            }
        }

        mutating func container(close: UInt8, isObject: Bool) -> Problem? {
            depth += 1
            guard depth <= JSONProblemFinder.maxDepth else {
                return problem("more than \(JSONProblemFinder.maxDepth) levels of nested arrays and objects")
            }
            defer { depth -= 1 }
            let opened = position
            position += 1
            skipSpace()
            if position < bytes.count, bytes[position] == close {
                position += 1
                return nil
            }
            while true {
                skipSpace()
                if isObject {
                    guard position < bytes.count else { return problem("the object opened at \(problem("", at: opened).place) is never closed") }
                    guard bytes[position] == UInt8(ascii: "\"") else { return problem("expected a key in quotes, found \(found)") }
                    if let problem = string() { return problem }
                    skipSpace()
                    guard position < bytes.count else { return problem("the object opened at \(problem("", at: opened).place) is never closed") }
                    guard bytes[position] == UInt8(ascii: ":") else { return problem("expected ':' after a key, found \(found)") }
                    position += 1
                }
                if let problem = value() { return problem }
                skipSpace()
                guard position < bytes.count else {
                    return problem("the \(isObject ? "object" : "array") opened at \(problem("", at: opened).place) is never closed")
                }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    // Foundation's parser takes a comma before the close, so this does too:
                    // it explains that parser's refusals, it does not add its own.
                    skipSpace()
                    if position < bytes.count, bytes[position] == close {
                        position += 1
                        return nil
                    }
                    continue
                }
                if bytes[position] == close {
                    position += 1
                    return nil
                }
                return problem("expected ',' or '\(Character(UnicodeScalar(close)))', found \(found)")
            }
        }

        mutating func literal(_ word: String) -> Problem? {
            let expected = Array(word.utf8)
            guard bytes.count - position >= expected.count, Array(bytes[position..<position + expected.count]) == expected else {
                return problem("expected a value, found \(found)")
            }
            position += expected.count
            return nil
        }

        mutating func number() -> Problem? {
            let start = position
            func digits() -> Int {
                let from = position
                while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
                return position - from
            }
            if bytes[position] == UInt8(ascii: "-") { position += 1 }
            if position < bytes.count, bytes[position] == UInt8(ascii: "0") {
                position += 1
                if position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                    return problem("a number with a leading zero", at: start)
                }
            } else if digits() == 0 {
                return problem("a number without digits", at: start)
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                position += 1
                guard digits() > 0 else { return problem("a number with no digit after its '.'", at: start) }
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
                position += 1
                if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
                guard digits() > 0 else { return problem("a number with no digit in its exponent", at: start) }
            }
            return nil
        }

        mutating func string() -> Problem? {
            let opened = position
            position += 1
            while position < bytes.count {
                let byte = bytes[position]
                switch byte {
                case UInt8(ascii: "\""):
                    position += 1
                    return nil
                case UInt8(ascii: "\\"):
                    if let problem = escape() { return problem }
                case 0x00..<0x20:
                    return problem(String(format: "a control character (0x%02X) inside a string; it must be escaped", byte))
                case 0x80...:
                    if let problem = utf8Sequence() { return problem }
                default:
                    position += 1
                }
            }
            return problem("the string opened at \(problem("", at: opened).place) has no closing quote")
        }

        mutating func escape() -> Problem? {
            let start = position
            position += 1
            guard position < bytes.count else { return problem(endMessage) }
            switch bytes[position] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                 UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                position += 1
                return nil
            case UInt8(ascii: "u"):
                guard let unit = hex4(at: position + 1) else { return problem("a \\u escape without four hex digits", at: start) }
                position += 5
                if (0xDC00...0xDFFF).contains(unit) { return problem(String(format: "a lone UTF-16 low surrogate \\u%04x", unit), at: start) }
                guard (0xD800...0xDBFF).contains(unit) else { return nil }
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u"),
                      let low = hex4(at: position + 2), (0xDC00...0xDFFF).contains(low) else {
                    return problem(String(format: "a lone UTF-16 high surrogate \\u%04x (not followed by a low one)", unit), at: start)
                }
                position += 6
                return nil
            default:
                return problem("an unknown escape \\\(found.trimmingCharacters(in: CharacterSet(charactersIn: "'")))", at: start)
            }
        }

        func hex4(at offset: Int) -> Int? {
            guard offset + 4 <= bytes.count else { return nil }
            let digits = bytes[offset..<offset + 4]
            guard digits.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) }) else { return nil }
            return Int(String(decoding: digits, as: UTF8.self), radix: 16)
        }

        /// One UTF-8 sequence of two to four bytes, no overlong form or surrogate.
        mutating func utf8Sequence() -> Problem? {
            let lead = bytes[position]
            let (length, low, high): (Int, UInt32, UInt32) = switch lead {
            case 0xC2...0xDF: (2, 0x80, 0x7FF)
            case 0xE0...0xEF: (3, 0x800, 0xFFFF)
            case 0xF0...0xF4: (4, 0x10000, 0x10FFFF)
            default: (0, 0, 0)
            }
            guard length > 0, position + length <= bytes.count else { return problem(String(format: "bytes that are not UTF-8 (0x%02X)", lead)) }
            var scalar = UInt32(lead) & (0xFF >> (length + 1))
            for offset in 1..<length {
                let next = bytes[position + offset]
                guard next & 0xC0 == 0x80 else { return problem(String(format: "bytes that are not UTF-8 (0x%02X 0x%02X)", lead, next)) }
                scalar = scalar << 6 | UInt32(next & 0x3F)
            }
            guard (low...high).contains(scalar), !(0xD800...0xDFFF).contains(scalar) else {
                return problem(String(format: "bytes that are not UTF-8 (0x%02X…)", lead))
            }
            position += length
            return nil
        }
    }
}

extension JSONProblemFinder.Problem {
    /// `line L, column C`.
    var place: String { "line \(line), column \(column)" }
}
