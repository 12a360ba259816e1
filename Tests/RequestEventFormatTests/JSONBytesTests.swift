import Foundation
@testable import RequestEventFormat
import RequestOperations
import XCTest

/// The byte writer the event log is written with: the same text the former `String` writer
/// gave, and JSON that Python's `json` reads back to the very string.
final class JSONBytesTests: XCTestCase {
    /// Every scalar up to U+02FF (all controls, DEL, C1, Latin), a surrogate pair's worth of
    /// emoji, a combining sequence, and runs of each mixed with plain text.
    private var awkwardStrings: [String] {
        var strings = (0...0x2FF).compactMap { Unicode.Scalar($0).map { String(Character($0)) } }
        strings += ["", "plain", "a\"b\\c\nd\u{1}é", "\u{7F}\u{80}\u{9F}\u{A0}", "😀 x 👩‍👩‍👧", "e\u{301}", "\u{2028}\u{2029}",
                    String(repeating: "abc\u{85}\"", count: 50), "tail\\", "\"head", "\u{C2}\u{80}", "\u{100}\u{9F}"]
        // Each byte that needs a look at every place of a line longer than the eight bytes
        // read at once, and plain runs of every length around eight.
        let plain = "abcdefghijklmnopqrstuvw"
        for special in ["\"", "\\", "\n", "\u{1}", "\u{1F}", "\u{7F}", "\u{80}", "\u{9F}", "é", "😀", " ", "!", "#", "[", "]", "~"] {
            for place in 0...plain.count {
                strings.append(String(plain.prefix(place)) + special + String(plain.dropFirst(place)))
            }
        }
        strings += (0...plain.count).map { String(plain.prefix($0)) }
        return strings
    }

    func testQuotedTextIsWhatTheFormerWriterGave() {
        for string in awkwardStrings {
            XCTAssertEqual(JSONText.quote(string), Self.formerQuote(string), "\(string.unicodeScalars.map(\.value))")
        }
    }

    func testNoRawControlCharacterIsEverWritten() {
        for string in awkwardStrings {
            for scalar in JSONText.quote(string).unicodeScalars {
                XCTAssertFalse(scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value), "\(string.unicodeScalars.map(\.value))")
            }
        }
    }

    func testPythonReadsEachStringBackAsItWas() throws {
        let strings = awkwardStrings
        let lines = strings.map { JSONText.quote($0) }.joined(separator: "\n") + "\n"
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jsonbytes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("strings.jsonl")
        try Data(lines.utf8).write(to: file)
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = ["-c", "import json,sys\nfor line in open(sys.argv[1], encoding='utf-8'):\n    print(json.loads(line).encode('utf-8').hex())",
                            file.path]
        let out = Pipe()
        python.standardOutput = out
        try python.run()
        let read = out.fileHandleForReading.readDataToEndOfFile()
        python.waitUntilExit()
        XCTAssertEqual(python.terminationStatus, 0)
        let decoded = String(decoding: read, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        XCTAssertEqual(decoded.count, strings.count)
        for (string, hex) in zip(strings, decoded) {
            XCTAssertEqual(hex, string.utf8.map { String(format: "%02x", $0) }.joined(), "\(string.unicodeScalars.map(\.value))")
        }
    }

    func testNumbersAreWhatTheFormerWriterGave() {
        var values: [Double] = [0, -0.0, 1, -1, 0.5, 1e-7, 4e-7, 5e-7, 0.000001, 0.0000015, 12345.678901, 1_000_000, 9.2e12, 1e13,
                                -3.25, .infinity, -.infinity, .nan, 9.5e12, 1e20, -1e20, 0.1 + 0.2]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            values.append(Double.random(in: -100_000...100_000, using: &generator))
            values.append(Double(Int.random(in: 0...1_000_000_000, using: &generator)) / 1_000_000)
        }
        for value in values {
            XCTAssertEqual(JSONText.number(value), Self.formerNumber(value), "\(value)")
        }
    }

    func testIntegersAndObjects() {
        var out = JSONBytes()
        for value in [0, 7, 10, 99, 100, -1, -10, Int.max, Int.min] {
            out.bytes = []
            out.int(value)
            XCTAssertEqual(out.text, "\(value)")
        }
        XCTAssertEqual(JSONText.object([:]), "{}")
        XCTAssertEqual(JSONText.object(["b": "2", "a": "\"1\"", "C": "x"]), #"{"C":"x","a":"\"1\"","b":"2"}"#)
    }

    /// A batch of lines in one buffer reads back line by line, each the line `line(for:)` gives.
    func testAppendedLinesAreTheLinesOneByOne() throws {
        let events = [
            RequestEvent(time: 1.25, operationID: "op-\u{1}\"", attempt: 2, payload: .finished(outcome: .success, status: 200, attempts: 2, duration: 0.5, reason: nil)),
            RequestEvent(time: 3, operationID: "b", attempt: 1, payload: .taskCompleted(error: TransportError(code: -1001, message: "timed\nout", tls: nil, timeout: nil,
                                                                                                                cancelledByHedge: true)),
                         program: "curl 42"),
        ]
        var bytes: [UInt8] = []
        for event in events {
            EventLog.append(event, to: &bytes)
            bytes.append(UInt8(ascii: "\n"))
        }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines, events.map(EventLog.line(for:)))
        for (line, event) in zip(lines, events) {
            XCTAssertEqual(try EventLog.parse(line: line, lineNumber: 1), event)
        }
    }

    // MARK: The former writer, kept here as the reference

    private static func formerQuote(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let s where s.value < 0x20 || (0x7F...0x9F).contains(s.value):
                let hex = String(s.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    private static func formerNumber(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        let micros = (value * 1_000_000).rounded()
        guard abs(micros) < 9.0e18 else { return String(format: "%.0f", value) }
        let negative = micros < 0
        let whole = Int64(abs(micros))
        let fraction = whole % 1_000_000
        var digits = String(fraction)
        digits = String(repeating: "0", count: 6 - digits.count) + digits
        while digits.count > 1, digits.hasSuffix("0") { digits.removeLast() }
        return (negative ? "-" : "") + "\(whole / 1_000_000).\(digits)"
    }
}
