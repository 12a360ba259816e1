import Foundation
@testable import RequestArchive
import RequestOperations
import XCTest

/// A large HAR is decoded a slice of entries per core: it must give exactly what decoding
/// the file whole gives — entries, the paths in the messages of skipped ones, errors.
final class HARSplitDecodeTests: XCTestCase {
    struct Outcome: Equatable {
        var startedAt: Date?
        var events: [RequestEvent]
        var entryCount: Int
        var skipped: [String]
        var torn: Bool
        var error: String?
    }

    func outcome(_ data: Data, split: Bool, slices: Int? = nil, strict: Bool = false) -> Outcome {
        do {
            let result = try HARImport.parse(data, file: "x.har", strict: strict, split: split, slices: slices)
            return Outcome(startedAt: result.startedAt, events: result.events, entryCount: result.entryCount,
                           skipped: result.skipped, torn: result.torn, error: nil)
        } catch {
            return Outcome(startedAt: nil, events: [], entryCount: 0, skipped: [], torn: false, error: "\(error)")
        }
    }

    func assertSame(_ data: Data, _ name: String, expectSplit: Bool? = nil, file: StaticString = #filePath, line: UInt = #line) {
        let whole = outcome(data, split: false)
        for slices in [1, 2, 3, 7] {
            XCTAssertEqual(outcome(data, split: true, slices: slices), whole, "\(name), \(slices) slices", file: file, line: line)
            XCTAssertEqual(outcome(data, split: true, slices: slices, strict: true), outcome(data, split: false, strict: true),
                           "\(name), \(slices) slices, strict", file: file, line: line)
        }
        if let expectSplit {
            let used: Bool
            if case .found = data.withUnsafeBytes({ HAREntriesLocator.locate($0) }) { used = true } else { used = false }
            XCTAssertEqual(used, expectSplit, "\(name): split or decoded whole", file: file, line: line)
        }
    }

    /// Before: the split reader replayed a file whose entries nest 509–510 deep, which the
    /// whole-file reader refused, and a HAR with `entries` twice replayed 0 operations, exit 0.
    func testBothReadersKeepTheSameRulesForDuplicateKeysAndNesting() throws {
        let entry = #"{"startedDateTime":"2024-01-01T00:00:00.000Z","time":1,"request":{"method":"GET","url":"http://h/","httpVersion":"HTTP/1.1","cookies":[],"headers":[],"queryString":[],"headersSize":-1,"bodySize":0},"response":{"status":200,"statusText":"OK","httpVersion":"HTTP/1.1","cookies":[],"headers":[],"content":{"size":0,"mimeType":"text/plain"},"redirectURL":"","headersSize":-1,"bodySize":0},"cache":{},"timings":{"send":0,"wait":1,"receive":0},"_x":NEST}"#
        func har(_ depth: Int) -> Data {
            Data(#"{"log":{"version":"1.2","creator":{"name":"t","version":"1"},"entries":[ENTRY]}}"#
                .replacingOccurrences(of: "ENTRY", with: entry)
                .replacingOccurrences(of: "NEST", with: String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8)
        }
        for depth in [508, 509, 510] {
            let split = outcome(har(depth), split: true, slices: 2), whole = outcome(har(depth), split: false)
            XCTAssertEqual(split, whole, "\(depth) levels")
            XCTAssertEqual(split.error?.contains("too many nested") == true, depth > 508, "\(depth): \(String(describing: split.error))")
        }
        for (name, text) in [("entries twice", #"{"log":{"entries":[ENTRY],"entries":[]}}"#), ("log twice", #"{"log":{"entries":[ENTRY]},"log":{"entries":[]}}"#)] {
            let data = Data(text.replacingOccurrences(of: "ENTRY", with: entry.replacingOccurrences(of: "NEST", with: "1")).utf8)
            let split = outcome(data, split: true, slices: 2), whole = outcome(data, split: false)
            XCTAssertEqual(split, whole, name)
            XCTAssert(split.error?.contains("appears twice") == true, "\(name): \(String(describing: split.error))")
        }
    }

    func testEveryRealFileGivesTheSame() throws {
        let folder = try XCTUnwrap(Bundle.module.url(forResource: "Fixtures", withExtension: nil))
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".har") }
        XCTAssertGreaterThanOrEqual(names.count, 11)
        for name in names {
            assertSame(try Data(contentsOf: folder.appendingPathComponent(name)), name)
        }
    }

    func entry(_ index: Int, status: String = "200", url: String? = nil) -> String {
        #"{"startedDateTime":"2026-11-22T10:00:0\#(index % 10).000Z","time":12.5,"request":{"method":"GET","url":"\#(url ?? "https://a.test/items/\(index)")","headers":[{"name":"X-Q","value":"a \"quoted\" \\ value ]}"}]},"response":{"status":\#(status),"headers":[],"content":{"size":2,"text":"{}"}},"timings":{"send":1,"wait":2,"receive":3}}"#
    }

    func har(_ entries: [String], before: String = #""version":"1.2","creator":{"name":"t","version":"1"},"#, after: String = "") -> Data {
        Data(#"{"log":{\#(before)"entries":[\#(entries.joined(separator: ",\n  "))]\#(after)}}"#.utf8)
    }

    func testShapesAndBrokenEntriesGiveTheSame() {
        let good = (0..<9).map { entry($0) }
        assertSame(har(good), "plain", expectSplit: true)
        assertSame(har([]), "no entries", expectSplit: true)
        assertSame(har(good, before: "", after: #","pages":[{"id":"p]"}]"#), "members after the entries", expectSplit: true)
        var bad = good
        bad[2] = entry(2, status: #""two hundred""#)
        bad[5] = #"{"startedDateTime":"2026-11-22T10:00:05.000Z"}"#
        bad[7] = "17"
        assertSame(har(bad), "entries that cannot be read, named by their place", expectSplit: true)
        assertSame(har(good.map { _ in entry(1, status: "1e300") }), "numbers out of range, strict")
        assertSame(Data((String(decoding: har(good), as: UTF8.self) + "  \n").utf8), "trailing space", expectSplit: true)
        assertSame(Data([0xEF, 0xBB, 0xBF]) + har(good), "a byte-order mark")
        assertSame(Data(("onInputData(" + String(decoding: har(good), as: UTF8.self) + ");").utf8), "JSONP")
        // Not the plain shape: decoded whole, with its errors.
        assertSame(Data(#"{"log":{"entries":[],"entries":[]}}"#.utf8), "entries twice", expectSplit: false)
        assertSame(Data(#"{"log":{"entri\u0065s":[]}}"#.utf8), "an escaped key", expectSplit: false)
        assertSame(Data(#"{"log":{"entries":[{"startedDateTime":"x",}]}}"#.utf8), "not JSON inside an entry", expectSplit: true)
        assertSame(Data(#"{"log":{"entries":[1,2]}, "x": tru}"#.utf8), "not JSON outside the entries", expectSplit: true)
        assertSame(Data(String(decoding: har(good), as: UTF8.self).dropLast(40).utf8), "cut short", expectSplit: false)
        assertSame(Data(#"[{"log":{"entries":[]}}]"#.utf8), "not an object", expectSplit: false)
        assertSame(Data(), "empty", expectSplit: false)
    }

    /// reqtop's own HAR (entries carrying their events, the session's start worked out from
    /// them), with other tools' entries mixed in: the same on every number of slices.
    func testReqtopsOwnEntriesGiveTheSame() throws {
        var events: [RequestEvent] = []
        for index in 0..<12 {
            let id = "op-\(index)", t = Double(index) * 0.25
            events += [
                RequestEvent(time: t, operationID: id, attempt: 1, payload: .queued(method: "GET", url: "http://h.test/\(index)", headers: ["Accept": "*/*"], maxAttempts: 2)),
                RequestEvent(time: t + 0.01, operationID: id, attempt: 1, payload: .started),
                RequestEvent(time: t + 0.05, operationID: id, attempt: 1, payload: .response(status: 200, headers: [:], expectedBytes: 5)),
                RequestEvent(time: t + 0.06, operationID: id, attempt: 1, payload: .finished(outcome: .success, status: 200, attempts: 1, duration: 0.06, reason: nil)),
            ]
        }
        let own = try HARExport.data(events: events, startedAt: Date(timeIntervalSince1970: 1_700_000_000))
        assertSame(own, "reqtop's own", expectSplit: true)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: own) as? [String: Any])
        var log = try XCTUnwrap(object["log"] as? [String: Any])
        var entries = try XCTUnwrap(log["entries"] as? [Any])
        let others = try (0..<5).map { try JSONSerialization.jsonObject(with: Data(entry($0).utf8)) }
        entries.insert(contentsOf: others, at: 3)
        log["entries"] = entries
        assertSame(try JSONSerialization.data(withJSONObject: ["log": log]), "reqtop's own and others", expectSplit: true)
    }

    /// Random cuts and byte changes of a small HAR: the same result or the same error.
    func testDamagedFilesGiveTheSame() {
        var generator = SystemRandomNumberGenerator()
        let original = Array(har((0..<6).map { entry($0) }))
        for _ in 0..<150 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let at = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[at] = [UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "]"), UInt8(ascii: "}"), UInt8(ascii: ","), UInt8(ascii: "x"), 0xFF]
                    .randomElement(using: &generator)!
            }
            let whole = outcome(Data(bytes), split: false)
            XCTAssertEqual(outcome(Data(bytes), split: true, slices: 2), whole, String(decoding: bytes, as: UTF8.self))
        }
    }
}
