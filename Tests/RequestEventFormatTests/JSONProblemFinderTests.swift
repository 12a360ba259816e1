import Foundation
import RequestEventFormat
import XCTest

/// Every JSON error names a line and a column and says what is wrong. Before, 191 fuzzed HAR
/// files and 186 plans got "unexpected end of file during JSON parse" with no place, and a
/// lone `\ud800` in an intact file was called an end of file.
final class JSONProblemFinderTests: XCTestCase {
    private func problem(_ text: String) -> String? {
        JSONProblemFinder.find(in: Data(text.utf8))?.description
    }

    func testEachFaultIsNamedWithItsPlace() {
        XCTAssertEqual(problem(""), "the document is empty at line 1, column 1")
        XCTAssertEqual(problem("{\"a\": 1"), "the object opened at line 1, column 1 is never closed at line 1, column 8")
        XCTAssertEqual(problem("{\n  \"a\": \"x"), "the string opened at line 2, column 8 has no closing quote at line 2, column 10")
        XCTAssertEqual(problem("{\"a\": \"\\ud800\"}"), "a lone UTF-16 high surrogate \\ud800 (not followed by a low one) at line 1, column 8")
        XCTAssertEqual(problem("[1,,]"), "expected a value, found ',' at line 1, column 4")
        XCTAssertEqual(problem("[01]"), "a number with a leading zero at line 1, column 2")
        XCTAssertEqual(problem("{\"a\" 1}"), "expected ':' after a key, found '1' at line 1, column 6")
        XCTAssertEqual(problem("{} x"), "more after the end of the document ('x') at line 1, column 4")
        XCTAssertEqual(problem("[\"a\tb\"]"), "a control character (0x09) inside a string; it must be escaped at line 1, column 4")
        XCTAssertEqual(problem(String(repeating: "[", count: 513) + String(repeating: "]", count: 513)),
                       "more than 512 levels of nested arrays and objects at line 1, column 513")
        XCTAssertNil(problem("{\"a\": [1, -2.5e3, true, null, \"\\ud83d\\ude00 é\"]}"))
    }

    func testTheDescriptionOfAParserErrorHasAPlace() {
        let data = Data("{\"requests\": [".utf8)
        XCTAssertThrowsError(try JSONSerialization.jsonObject(with: data)) { error in
            let text = StrictJSONReader.describe(jsonError: error, in: data)
            XCTAssert(text.contains("line 1, column 15"), text)
            XCTAssertFalse(text.contains("unexpected end of file"), text)
        }
    }

    /// Foundation's parser is the judge of what is JSON: wherever it refuses a document, the
    /// finder finds a fault, and wherever the finder finds none, the parser accepts it.
    func testTheFinderAgreesWithFoundationOnMutatedDocuments() {
        let seed = Array(#"{"log": {"entries": [{"a": [1, 2.5, -3e2, true, false, null], "s": "x\u00e9\"\\ \ud83d\ude00 é"}], "n": {}}}"#.utf8)
        var random = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]":,\ u0123456789abcdefxe-+.tn "#.utf8) + [0x0A, 0x00, 0xC3, 0xA9, 0xFF, 0xED, 0xA0, 0x80]
        var disagreements: [String] = []
        for _ in 0..<3_000 {
            var bytes = seed
            for _ in 0...Int.random(in: 0...3, using: &random) {
                let index = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[index] = alphabet.randomElement(using: &random)!
                case 1: bytes.remove(at: index)
                default: bytes.insert(alphabet.randomElement(using: &random)!, at: index)
                }
                if bytes.isEmpty { bytes = [0x20] }
            }
            let data = Data(bytes)
            let accepted = (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) != nil
            let found = JSONProblemFinder.find(in: data)
            if accepted != (found == nil), disagreements.count < 5 {
                disagreements.append("\(String(decoding: bytes, as: UTF8.self).debugDescription): Foundation \(accepted ? "accepts" : "refuses"), finder \(found?.description ?? "none")")
            }
        }
        XCTAssertEqual(disagreements, [])
    }
}
