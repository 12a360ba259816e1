import Foundation
import RequestEventFormat

/// A body as lines a person reads: JSON pretty-printed with its tokens told apart (keys,
/// strings, numbers, literals), other text as it is, binary as a hex dump. Pure: the Body
/// tab draws these, tests read them.
///
/// JSON is re-indented token by token, not decoded and re-encoded, so member order and
/// number spellings stay as the server wrote them.
enum BodyText {
    enum Kind: Sendable, Equatable { case plain, key, string, number, literal, punctuation, note }

    /// One line: runs of text, each of one kind.
    struct Line: Sendable, Equatable {
        var runs: [(text: String, kind: Kind)]

        init(_ runs: [(String, Kind)]) { self.runs = runs.map { (text: $0.0, kind: $0.1) } }

        var text: String { runs.map(\.text).joined() }

        static func == (lhs: Line, rhs: Line) -> Bool {
            lhs.runs.count == rhs.runs.count && zip(lhs.runs, rhs.runs).allSatisfy { $0.text == $1.text && $0.kind == $1.kind }
        }
    }

    /// The lines of `data` under `mediaType` (nil: judged by its bytes).
    static func lines(_ data: Data, mediaType: String?) -> [Line] {
        let type = mediaType?.lowercased() ?? ""
        guard let text = String(data: data, encoding: .utf8), !looksBinary(data) else { return hexDump(data) }
        let first = text.utf8.first { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }
        let looksJSON = type.contains("json") || (type.isEmpty && (first == UInt8(ascii: "{") || first == UInt8(ascii: "[")))
        if looksJSON {
            if let problem = JSONProblemFinder.find(in: data) {
                return [Line([("not valid JSON: \(problem) — shown as text", .note)])] + plainLines(text)
            }
            return prettyJSON(text)
        }
        return plainLines(text)
    }

    private static func looksBinary(_ data: Data) -> Bool {
        data.prefix(4096).contains { $0 == 0 || ($0 < 0x20 && ![0x09, 0x0A, 0x0D, 0x1B].contains($0)) }
    }

    static func plainLines(_ text: String) -> [Line] {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { Line([(String($0.replacingOccurrences(of: "\r", with: "")), .plain)]) }
    }

    /// 16 bytes a line: offset, hex, and the printable ones.
    static func hexDump(_ data: Data) -> [Line] {
        let bytes = [UInt8](data)
        return stride(from: 0, to: bytes.count, by: 16).map { offset in
            let chunk = bytes[offset..<min(offset + 16, bytes.count)]
            let hex = chunk.map { String(format: "%02x", $0) }.joined(separator: " ")
            let ascii = String(chunk.map { (0x20..<0x7F).contains($0) ? Character(UnicodeScalar($0)) : "." })
            return Line([(String(format: "%08x  ", offset), .note), (hex.padding(toLength: 48, withPad: " ", startingAt: 0), .plain), ("  " + ascii, .note)])
        }
    }

    /// Valid JSON re-indented by two spaces, tokens kept as written.
    static func prettyJSON(_ text: String) -> [Line] {
        var lines: [Line] = []
        var current: [(String, Kind)] = []
        var depth = 0
        var expectingKey = false
        var stack: [Character] = []
        func newline() {
            lines.append(Line(current))
            current = [(String(repeating: "  ", count: depth), .plain)]
        }
        let scalars = Array(text.unicodeScalars)
        var index = 0
        current = []
        while index < scalars.count {
            let c = scalars[index]
            switch c {
            case " ", "\t", "\n", "\r":
                index += 1
            case "{", "[":
                current.append((String(c), .punctuation))
                stack.append(Character(c))
                index += 1
                // An empty container stays on one line.
                var next = index
                while next < scalars.count, [" ", "\t", "\n", "\r"].contains(scalars[next]) { next += 1 }
                if next < scalars.count, scalars[next] == (c == "{" ? "}" : "]") {
                    current.append((String(scalars[next]), .punctuation))
                    stack.removeLast()
                    index = next + 1
                    continue
                }
                depth += 1
                expectingKey = c == "{"
                newline()
            case "}", "]":
                depth -= 1
                if !stack.isEmpty { stack.removeLast() }
                newline()
                current.append((String(c), .punctuation))
                index += 1
            case ",":
                current.append((",", .punctuation))
                expectingKey = stack.last == "{"
                index += 1
                newline()
            case ":":
                current.append((": ", .punctuation))
                index += 1
            case "\"":
                var end = index + 1
                while end < scalars.count, scalars[end] != "\"" { end += scalars[end] == "\\" ? 2 : 1 }
                let token = String(String.UnicodeScalarView(scalars[index...min(end, scalars.count - 1)]))
                current.append((token, expectingKey ? .key : .string))
                expectingKey = false
                index = end + 1
            default:
                var end = index
                while end < scalars.count, !",:]} \t\n\r".unicodeScalars.contains(scalars[end]) { end += 1 }
                let token = String(String.UnicodeScalarView(scalars[index..<end]))
                current.append((token, ["true", "false", "null"].contains(token) ? .literal : .number))
                index = max(end, index + 1)
            }
        }
        if !current.isEmpty { lines.append(Line(current)) }
        return lines
    }
}
