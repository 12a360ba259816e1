import Foundation

/// A JSON object as the event lines reqtop writes hold it: members whose values are strings,
/// numbers, booleans, null or (nested a few levels) objects. Read straight from the line's
/// bytes, without Foundation objects — `JSONSerialization` made an `NSNumber` and a `String`
/// per number and was two thirds of the time to read a recording.
///
/// It reads only what it can read exactly as `JSONSerialization` would, and answers nil for
/// anything else (an array, a duplicate key, a number it would have to round, a lone
/// surrogate, invalid UTF-8, trailing bytes): the caller then falls back to
/// `JSONSerialization`, which accepts or refuses the line with its own words. A fuzz target
/// (`jsonl-fast`) checks that every line it reads gives the same event as the fallback.
struct FlatJSONObject {
    enum Value {
        case string(String)
        /// A plain integer literal of at most 15 digits (exact in a Double).
        case integer(Int)
        /// Any other finite number.
        case number(Double)
        case bool(Bool)
        case null
        case object(FlatJSONObject)
    }

    private(set) var members: [(key: String, value: Value)] = []

    subscript(key: String) -> Value? {
        for member in members where member.key == key { return member.value }
        return nil
    }

    /// The object in `bytes` (one line, whitespace around it allowed); nil when the line is not
    /// one this reader takes exactly.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> FlatJSONObject? {
        var scanner = Scanner(bytes: bytes)
        scanner.skipWhitespace()
        guard let object = scanner.object(depth: 0) else { return nil }
        scanner.skipWhitespace()
        return scanner.atEnd ? object : nil
    }

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        init(bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
        }

        var atEnd: Bool { index >= bytes.count }

        private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while index < bytes.count {
                let byte = bytes[index]
                guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
                index += 1
            }
        }

        private mutating func take(_ byte: UInt8) -> Bool {
            guard current == byte else { return false }
            index += 1
            return true
        }

        mutating func object(depth: Int) -> FlatJSONObject? {
            guard depth < 4, take(UInt8(ascii: "{")) else { return nil }
            var object = FlatJSONObject()
            // The keys seen, once there are enough that a scan per key would cost: a response
            // with 40,000 headers took 52 s to replay, checked by scanning (quadratic).
            var seen: Set<String>?
            skipWhitespace()
            if take(UInt8(ascii: "}")) { return object }
            while true {
                skipWhitespace()
                guard let key = string() else { return nil }
                // A repeated key: JSONSerialization's choice is not ours to guess.
                if seen == nil, object.members.count >= 16 { seen = Set(object.members.map(\.key)) }
                if seen != nil {
                    guard seen!.insert(key).inserted else { return nil }
                } else {
                    guard object[key] == nil else { return nil }
                }
                skipWhitespace()
                guard take(UInt8(ascii: ":")) else { return nil }
                skipWhitespace()
                guard let value = value(depth: depth) else { return nil }
                object.members.append((key, value))
                skipWhitespace()
                if take(UInt8(ascii: ",")) { continue }
                return take(UInt8(ascii: "}")) ? object : nil
            }
        }

        private mutating func value(depth: Int) -> Value? {
            guard let first = current else { return nil }
            switch first {
            case UInt8(ascii: "\""): return string().map(Value.string)
            case UInt8(ascii: "{"): return object(depth: depth + 1).map(Value.object)
            case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return literal("null") ? .null : nil
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
            default: return nil  // arrays and anything else: not ours
            }
        }

        private mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
            index += count
            return true
        }

        /// JSON's number grammar exactly; a plain integer of up to 15 digits stays an integer.
        /// A number with more digits than a Double holds exactly, or a large exponent, is
        /// declined: JSONSerialization rounds those its own way (the fuzzer found
        /// `0.88888888888888046853` read one ulp apart).
        private mutating func number() -> Value? {
            let start = index
            _ = take(UInt8(ascii: "-"))
            let digitsStart = index
            guard let first = current, isDigit(first) else { return nil }
            index += 1
            if first != UInt8(ascii: "0") { while let byte = current, isDigit(byte) { index += 1 } }
            var digits = index - digitsStart
            var fractionDigits = 0
            var plain = true
            if take(UInt8(ascii: ".")) {
                plain = false
                let fractionStart = index
                guard let byte = current, isDigit(byte) else { return nil }
                while let byte = current, isDigit(byte) { index += 1 }
                fractionDigits = index - fractionStart
                digits += fractionDigits
            }
            var exponent = 0
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                plain = false
                index += 1
                var negative = false
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") {
                    negative = current == UInt8(ascii: "-")
                    index += 1
                }
                let exponentStart = index
                guard let byte = current, isDigit(byte) else { return nil }
                while let byte = current, isDigit(byte) { index += 1 }
                guard index - exponentStart <= 3 else { return nil }
                for offset in exponentStart..<index { exponent = exponent * 10 + Int(bytes[offset] - UInt8(ascii: "0")) }
                if negative { exponent = -exponent }
            }
            // Exact in both readers: at most 15 digits, scaled by a power of ten a Double holds exactly.
            guard digits <= 15, abs(exponent - fractionDigits) <= 22 else { return nil }
            if plain {
                var magnitude = 0
                for offset in digitsStart..<index { magnitude = magnitude * 10 + Int(bytes[offset] - UInt8(ascii: "0")) }
                return .integer(digitsStart > start ? -magnitude : magnitude)
            }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            guard let double = Double(text), double.isFinite else { return nil }
            return .number(double)
        }

        private func isDigit(_ byte: UInt8) -> Bool {
            byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
        }

        /// A string literal: its bytes validated as UTF-8, escapes decoded; nil for a control
        /// character, an unknown escape, a lone surrogate or invalid UTF-8.
        mutating func string() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while let byte = current, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
                guard byte >= 0x20 else { return nil }
                index += 1
            }
            guard let stop = current else { return nil }
            if stop == UInt8(ascii: "\"") {
                // No escape (the common case): the bytes are the string.
                let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return text
            }
            var decoded = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
            while let byte = current {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(validating: decoded, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard escape(into: &decoded) else { return nil }
                case 0..<0x20:
                    return nil
                default:
                    decoded.append(byte)
                }
            }
            return nil
        }

        private mutating func escape(into decoded: inout [UInt8]) -> Bool {
            guard let byte = current else { return false }
            index += 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(byte)
            case UInt8(ascii: "b"): decoded.append(0x08)
            case UInt8(ascii: "f"): decoded.append(0x0C)
            case UInt8(ascii: "n"): decoded.append(0x0A)
            case UInt8(ascii: "r"): decoded.append(0x0D)
            case UInt8(ascii: "t"): decoded.append(0x09)
            case UInt8(ascii: "u"):
                guard var unit = hex4() else { return false }
                if (0xD800..<0xDC00).contains(unit) {
                    // A high surrogate must be followed by an escaped low one.
                    guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return false }
                    unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(unit) {
                    return false
                }
                guard let scalar = Unicode.Scalar(unit) else { return false }
                decoded.append(contentsOf: UTF8.encode(scalar)!)
            default:
                return false
            }
            return true
        }

        private mutating func hex4() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }
    }
}
