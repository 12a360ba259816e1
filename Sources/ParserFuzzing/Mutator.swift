import Foundation

/// Changes an input the way fuzzers do — bits flipped, bytes and ranges deleted, copied and
/// spliced — and the way our crashes were found: a number swapped for one at the edge of
/// what a type holds, a JSON token dropped in, a deep nesting. Deterministic for a seed, so
/// a failure in `swift test` repeats.
public struct Mutator {
    private var state: UInt64
    /// Tokens worth inserting: numbers at every edge the parsers met, JSON pieces, bytes
    /// that split lines and headers, and the field names of the seeds.
    private let tokens: [[UInt8]]

    public init(seed: UInt64, seeds: [Data]) {
        state = seed
        var tokens = Self.edgeTokens.map { Array($0.utf8) }
        tokens += Set(seeds.flatMap(Self.quotedStrings)).sorted().prefix(200).map { Array($0.utf8) }
        self.tokens = tokens
    }

    static let edgeTokens = [
        "0", "-1", "1e19", "1e300", "-1e309", "1e-320", "1.7976931348623157e308", "9007199254740993",
        "9223372036854775807", "9223372036854775808", "18446744073709551616", "99999999999999999999999",
        "4294967296", "-0", "0.5", "NaN", "Infinity", "null", "true", "false", "[]", "{}", "\"\"", "\"x\"",
        "\r\n", "\n", "\0", "\\u0000", "\\ud800", "é", "\u{202E}", "%zz", "%00", "{{", "}}", "{{x.y}}",
        "\"dependsOn\":[\"a\"]", "\"id\":\"a\"", "\"t\":1e13", "\"time\":1e19", "\"status\":1e19",
    ]

    private mutating func next() -> UInt64 {
        // SplitMix64.
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private mutating func below(_ bound: Int) -> Int {
        bound <= 1 ? 0 : Int(next() % UInt64(bound))
    }

    /// One to four changes to `input`; `other` is another corpus entry to splice with.
    public mutating func mutate(_ input: Data, other: Data, maxLength: Int = 65536) -> Data {
        var bytes = [UInt8](input)
        for _ in 0...below(4) { change(&bytes, other: [UInt8](other)) }
        if bytes.count > maxLength { bytes.removeLast(bytes.count - maxLength) }
        return Data(bytes)
    }

    private mutating func change(_ bytes: inout [UInt8], other: [UInt8]) {
        let at = below(bytes.count + 1)
        switch below(9) {
        case 0 where !bytes.isEmpty:
            bytes[below(bytes.count)] ^= 1 << UInt8(below(8))
        case 1 where !bytes.isEmpty:
            let interesting: [UInt8] = [0, 0xFF, 0x22, 0x7B, 0x7D, 0x5B, 0x5D, 0x2C, 0x3A, 0x0A, 0x5C, 0x2D, 0x65, 0x39, 0x80, 0xC3]
            bytes[below(bytes.count)] = interesting[below(interesting.count)]
        case 2 where !bytes.isEmpty:
            let length = 1 + below(min(64, bytes.count - at + 1))
            bytes.removeSubrange(at..<min(bytes.count, at + length))
        case 3 where !bytes.isEmpty:
            let from = below(bytes.count)
            let length = 1 + below(min(256, bytes.count - from))
            bytes.insert(contentsOf: bytes[from..<(from + length)], at: at)
        case 4:
            bytes.insert(contentsOf: tokens[below(tokens.count)], at: at)
        case 5:
            replaceNumber(&bytes)
        case 6 where !other.isEmpty:
            let cut = below(other.count)
            bytes = Array(bytes[..<at]) + other[cut...]
        case 7 where !bytes.isEmpty:
            bytes.removeLast(below(bytes.count))
        case 8:
            let depth = 1 + below(3000)
            let open: UInt8 = below(2) == 0 ? 0x5B : 0x7B
            bytes.insert(contentsOf: [UInt8](repeating: open, count: depth), at: at)
        default:
            bytes.insert(UInt8(truncatingIfNeeded: next()), at: at)
        }
    }

    /// Swaps a run of digits for an edge number.
    private mutating func replaceNumber(_ bytes: inout [UInt8]) {
        let digits = bytes.indices.filter { (0x30...0x39).contains(bytes[$0]) }
        guard !digits.isEmpty else { return }
        var start = digits[below(digits.count)]
        var end = start
        while start > 0, (0x30...0x39).contains(bytes[start - 1]) || bytes[start - 1] == 0x2E { start -= 1 }
        while end < bytes.count, (0x30...0x39).contains(bytes[end]) || bytes[end] == 0x2E || bytes[end] == 0x65 { end += 1 }
        let numbers = Self.edgeTokens.prefix(16)
        bytes.replaceSubrange(start..<end, with: Array(numbers[numbers.startIndex + below(numbers.count)].utf8))
    }

    /// The `"quoted"` strings of a seed (its field names and values), as tokens.
    private static func quotedStrings(_ data: Data) -> [String] {
        let text = String(decoding: data, as: UTF8.self)
        var found: [String] = []
        var current: String?
        for character in text {
            if character == "\"" {
                if let word = current {
                    if word.count <= 24 { found.append("\"\(word)\"") }
                    current = nil
                } else {
                    current = ""
                }
            } else if current != nil {
                current!.append(character)
            }
        }
        return found
    }
}
