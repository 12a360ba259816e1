import Foundation

/// JSON text appended as UTF-8 bytes to one buffer: how the event log writes every line.
///
/// The headless output, recordings and the endpoint write each event of every request; built
/// from `String` pieces (a quoted string made and then appended, numbers through
/// interpolation) the lines were a tenth of the proxy's CPU. Here a string with nothing to
/// escape is copied in one run, and numbers are written digit by digit.
struct JSONBytes {
    var bytes: [UInt8] = []

    /// Text that needs no escaping (the format's own keys and punctuation).
    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Text that needs no escaping, from a `String` (a key). Named apart from the
    /// `StaticString` form: with the same name a literal chose this one (a literal is a
    /// `String` first), ~150 instructions a call against ~90 inlined, five calls an event (#58).
    mutating func raw(text: String) {
        // Through the string's own buffer: `append(contentsOf: text.utf8)` took the generic
        // path of a sequence of unknown layout, ~400 instructions for a ten-letter key (#58).
        if text.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
            bytes.append(contentsOf: text.utf8)
        }
    }

    /// A JSON string literal. Besides what JSON requires (`"`, `\`, below U+0020), DEL and
    /// the C1 controls (U+0080–U+009F) are escaped too: a terminal reading the line must never
    /// meet a raw control character.
    mutating func quoted(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        escaped(string)
        bytes.append(UInt8(ascii: "\""))
    }

    /// What goes between a JSON string literal's quotes (``quoted(_:)``).
    mutating func escaped(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            let count = utf8.count
            var runStart = 0, index = 0
            let base = UnsafeRawPointer(utf8.baseAddress)
            while index < count {
                // Eight bytes at a time while none needs a look: most of a line is plain
                // ASCII (names, URLs, values), a byte at a time was a seventh of writing an
                // event line (#58).
                if let base, count - index >= 8, !Self.needsALook(base.loadUnaligned(fromByteOffset: index, as: UInt64.self)) {
                    index += 8
                    continue
                }
                let byte = utf8[index]
                // A C1 control is U+0080–U+009F: 0xC2 then 0x80–0x9F in UTF-8.
                let c1 = byte == 0xC2 && index + 1 < count && (0x80...0x9F).contains(utf8[index + 1])
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0x7F || c1 else {
                    index += 1
                    continue
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                switch byte {
                case UInt8(ascii: "\""): raw("\\\"")
                case UInt8(ascii: "\\"): raw("\\\\")
                case UInt8(ascii: "\n"): raw("\\n")
                case UInt8(ascii: "\r"): raw("\\r")
                case UInt8(ascii: "\t"): raw("\\t")
                default: unicodeEscape(c1 ? utf8[index + 1] : byte)
                }
                index += c1 ? 2 : 1
                runStart = index
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<count]))
        }
    }

    /// Whether any of the eight bytes in `word` is one `quoted` escapes or must read with its
    /// neighbour: below U+0020, `"`, `\`, DEL, or any byte from 0x80 (a C1 control's lead
    /// among them). A byte is zero in `x` when `(x - 0x01…) & ~x & 0x80…` is not (exact as
    /// to whether one is; which, it may not say).
    static func needsALook(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        func hasZero(_ x: UInt64) -> Bool { (x &- ones) & ~x & highs != 0 }
        return word & highs != 0
            || (word &- ones &* 0x20) & ~word & highs != 0
            || hasZero(word ^ (ones &* 0x22)) || hasZero(word ^ (ones &* 0x5C)) || hasZero(word ^ (ones &* 0x7F))
    }

    /// `\u00xx`, lower-case hex: a control character below U+0100.
    private mutating func unicodeEscape(_ value: UInt8) {
        func hex(_ nibble: UInt8) -> UInt8 { nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10 }
        raw("\\u00")
        bytes.append(hex(value >> 4))
        bytes.append(hex(value & 0x0F))
    }

    mutating func int<Integer: BinaryInteger>(_ value: Integer) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        digits(UInt64(value.magnitude), width: 1)
    }

    /// `value` in decimal, at least `width` digits (zeros in front).
    private mutating func digits(_ value: UInt64, width: Int) {
        // Right to left on the stack, one division a digit, appended at once (a division
        // pair and an append a digit were ~500 instructions an event's time, #58).
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buffer in
            var at = buffer.count, rest = value
            repeat {
                let (quotient, digit) = rest.quotientAndRemainder(dividingBy: 10)
                at -= 1
                buffer[at] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: digit)
                rest = quotient
            } while rest > 0 || buffer.count - at < min(width, buffer.count)
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[at...]))
        }
    }

    /// Seconds with microsecond resolution, without exponent notation (``JSONText/number(_:)``).
    mutating func number(_ value: Double) {
        guard value.isFinite else { return raw("0") }
        let micros = (value * 1_000_000).rounded()
        guard abs(micros) < 9.0e18 else { return raw(text: String(format: "%.0f", value)) }
        if micros < 0 { bytes.append(UInt8(ascii: "-")) }
        let whole = UInt64(abs(micros))
        digits(whole / 1_000_000, width: 1)
        bytes.append(UInt8(ascii: "."))
        // Six places, trailing zeros dropped, at least one.
        var fraction = whole % 1_000_000, width = 6
        while width > 1, fraction % 10 == 0 {
            fraction /= 10
            width -= 1
        }
        digits(fraction, width: width)
    }

    /// A string-to-string object with its keys sorted.
    mutating func object(_ dictionary: [String: String]) {
        bytes.append(UInt8(ascii: "{"))
        for (index, pair) in dictionary.sorted(by: { $0.key < $1.key }).enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            quoted(pair.key)
            bytes.append(UInt8(ascii: ":"))
            quoted(pair.value)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    var text: String { String(decoding: bytes, as: UTF8.self) }
}
