import Foundation
import RequestEventFormat
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the elements of a HAR's `$.log.entries` are in its bytes, found by walking the JSON's
/// structure (strings, nesting, commas) without decoding it, so that a large HAR can be
/// decoded a slice of entries per core (``HARImport``).
///
/// It looks for the plain shape only: an object whose `log` member is an object with one
/// `entries` array, keys written without escapes. A torn file, bytes that are not JSON or an
/// escaped key give ``Outcome/wholeFile``, and the file is decoded whole, with the whole-file
/// decoder's errors. Two rules hold for both readers, so they never give two answers
/// (``Outcome/refused(_:)``): a key named twice in the document or in `log` (the whole-file
/// decoder kept one of two `entries` and replayed nothing), and nesting deeper than
/// ``maxDepth`` (the whole-file decoder's limit; a slice decoded alone went 3 levels further).
/// Nothing else here decides whether the JSON is valid: the elements and the rest of the
/// file are each decoded, and so checked, by `JSONDecoder`.
enum HAREntriesLocator {
    /// `JSONDecoder`'s own limit: it refuses a 513th level.
    static let maxDepth = 512

    struct Found {
        /// The `[` … `]` of `entries`.
        var array: Range<Int>
        /// Each element, without the whitespace around it.
        var elements: [Range<Int>]
    }

    enum Outcome {
        case found(Found)
        /// Not the plain shape: decode the file whole.
        case wholeFile
        /// Neither reader may take it: why, with the place.
        case refused(String)
    }

    static func locate(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        var scanner = Scanner(bytes: bytes)
        var found: Found?
        var rootKeys = Set<String>(), logKeys = Set<String>()
        let shaped = scanner.object { key, scanner in
            guard rootKeys.insert(key).inserted else { return scanner.duplicate(key, in: "the document") }
            guard key == "log" else { return scanner.skipValue() }
            return scanner.object { key, scanner in
                guard logKeys.insert(key).inserted else { return scanner.duplicate(key, in: "log") }
                guard key == "entries" else { return scanner.skipValue() }
                guard let entries = scanner.array() else { return false }
                found = entries
                return true
            }
        }
        if let refusal = scanner.refusal { return .refused(refusal) }
        scanner.skipSpace()
        guard shaped, scanner.atEnd, let found else { return .wholeFile }
        return .found(found)
    }

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var position = 0
        /// Levels of objects and arrays around the position.
        var level = 0
        /// Set when a rule both readers keep is broken; the walk stops there.
        var refusal: String?

        var atEnd: Bool { position == bytes.count }

        static func isSpace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
        }

        mutating func skipSpace() {
            while position < bytes.count, Self.isSpace(bytes[position]) { position += 1 }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
            return true
        }

        /// An object's members: `member` is called with each key, the scanner at its value,
        /// and reads or skips the value.
        mutating func object(_ member: (String, inout Scanner) -> Bool) -> Bool {
            guard take(UInt8(ascii: "{")) else { return false }
            level += 1
            defer { level -= 1 }
            if take(UInt8(ascii: "}")) { return true }
            while true {
                skipSpace()
                guard let key = plainKey(), take(UInt8(ascii: ":")) else { return false }
                skipSpace()
                guard member(key, &self) else { return false }
                if take(UInt8(ascii: ",")) { continue }
                return take(UInt8(ascii: "}"))
            }
        }

        /// The array at the scanner and where each element is.
        mutating func array() -> Found? {
            skipSpace()
            let start = position
            guard take(UInt8(ascii: "[")) else { return nil }
            level += 1
            defer { level -= 1 }
            var elements: [Range<Int>] = []
            if take(UInt8(ascii: "]")) { return Found(array: start..<position, elements: []) }
            while true {
                skipSpace()
                let elementStart = position
                guard skipValue() else { return nil }
                elements.append(elementStart..<position)
                if take(UInt8(ascii: ",")) { continue }
                guard take(UInt8(ascii: "]")) else { return nil }
                return Found(array: start..<position, elements: elements)
            }
        }

        /// Refuses a key named twice: which one it keeps is no rule to replay by.
        mutating func duplicate(_ key: String, in object: String) -> Bool {
            refusal = "the key \"\(key)\" appears twice in \(object) (\(place(position))): a HAR names each key once"
            return false
        }

        func place(_ offset: Int) -> String {
            TextPosition.describe(offset: offset, in: bytes)
        }

        /// A key in quotes with no escape in it (an escaped key might be `log` or `entries`
        /// in disguise: such a file is decoded whole).
        mutating func plainKey() -> String? {
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { return nil }
            let start = position + 1
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
                if bytes[end] == UInt8(ascii: "\\") { return nil }
                end += 1
            }
            guard end < bytes.count else { return nil }
            position = end + 1
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }

        /// Past one value: a string, an object or array (by nesting), or a scalar.
        mutating func skipValue() -> Bool {
            skipSpace()
            guard position < bytes.count else { return false }
            switch bytes[position] {
            case UInt8(ascii: "\""):
                return skipString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                while position < bytes.count {
                    switch bytes[position] {
                    case UInt8(ascii: "\""):
                        guard skipString() else { return false }
                        continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["):
                        depth += 1
                        if level + depth > HAREntriesLocator.maxDepth {
                            refusal = "not valid JSON (too many nested arrays or dictionaries at \(place(position)); at most \(HAREntriesLocator.maxDepth) levels)"
                            return false
                        }
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 {
                            position += 1
                            return true
                        }
                    default: break
                    }
                    position += 1
                }
                return false
            default:
                let start = position
                while position < bytes.count {
                    let byte = bytes[position]
                    if Self.isSpace(byte) || byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") { break }
                    position += 1
                }
                return position > start
            }
        }

        /// Past a string, its escapes included. Strings are most of a HAR (bodies): the next
        /// quote is found with `memchr`, then it is the end unless an odd run of backslashes
        /// stands before it.
        mutating func skipString() -> Bool {
            guard let base = bytes.baseAddress else { return false }
            position += 1
            while position < bytes.count {
                guard let found = memchr(base + position, Int32(UInt8(ascii: "\"")), bytes.count - position) else {
                    position = bytes.count
                    return false
                }
                let quote = base.distance(to: UnsafeRawPointer(found))
                var backslashes = 0
                while quote - backslashes - 1 >= position, bytes[quote - backslashes - 1] == UInt8(ascii: "\\") { backslashes += 1 }
                position = quote + 1
                if backslashes % 2 == 0 { return true }
            }
            return false
        }
    }
}
