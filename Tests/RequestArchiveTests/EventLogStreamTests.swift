import Foundation
@testable import RequestArchive
import RequestEventFormat
import RequestOperations
import XCTest

/// The stream reads what ``EventLogFile`` reads — the same events, the same torn last line,
/// the same errors — whatever the size of its pieces, so lines cut across pieces too.
final class EventLogStreamTests: XCTestCase {
    private let header = #"{"event":"session","version":1,"startedAt":"2026-11-22T10:00:00.000Z"}"#

    private func lines(_ count: Int) -> [String] {
        (0..<count).map { index in
            EventLog.line(for: RequestEvent(time: Double(index) / 10, operationID: "op-\(index % 7)", attempt: 1,
                                            payload: index % 3 == 0 ? .started : .data(bytes: index)))
        }
    }

    private func write(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).jsonl").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    private func streamed(_ path: String, pieceSize: Int, limit: Int = 5) -> Result<(events: [RequestEvent], torn: Int?, started: Date?), ArchiveError> {
        do {
            let stream = try EventLogStream(path: path, pieceSize: pieceSize)
            var events: [RequestEvent] = []
            while let batch = try stream.next(upTo: limit) {
                XCTAssertFalse(batch.isEmpty, "a batch is never empty")
                events += batch
            }
            return .success((events, stream.tornLastLine, stream.startedAt))
        } catch let error as ArchiveError {
            return .failure(error)
        } catch {
            return .failure(ArchiveError(file: path, message: "\(error)"))
        }
    }

    private func whole(_ path: String) -> Result<(events: [RequestEvent], torn: Int?, started: Date?), ArchiveError> {
        do {
            let file = try EventLogFile.read(path: path)
            return .success((file.events, file.tornLastLine, file.startedAt))
        } catch let error as ArchiveError {
            return .failure(error)
        } catch {
            return .failure(ArchiveError(file: path, message: "\(error)"))
        }
    }

    private func assertSame(_ text: String, _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let path = try write(text)
        let expected = whole(path)
        for pieceSize in [16, 64, 1000, 1 << 20] {
            let got = streamed(path, pieceSize: pieceSize)
            switch (expected, got) {
            case (.success(let a), .success(let b)):
                XCTAssertEqual(a.events, b.events, "\(what), pieces of \(pieceSize)", file: file, line: line)
                XCTAssertEqual(a.torn, b.torn, "\(what), pieces of \(pieceSize)", file: file, line: line)
                XCTAssertEqual(a.started, b.started, "\(what), pieces of \(pieceSize)", file: file, line: line)
            case (.failure(let a), .failure(let b)):
                XCTAssertEqual(a, b, "\(what), pieces of \(pieceSize)", file: file, line: line)
            default:
                XCTFail("\(what), pieces of \(pieceSize): whole \(expected), streamed \(got)", file: file, line: line)
            }
        }
    }

    func testTheSameAsReadingTheWholeFile() throws {
        let body = lines(40)
        try assertSame(([header] + body).joined(separator: "\n") + "\n", "a recording")
        try assertSame(([header] + body).joined(separator: "\n"), "no newline at the end")
        try assertSame("\u{FEFF}" + ([header] + body).joined(separator: "\r\n") + "\r\n", "a byte order mark and CRLF")
        try assertSame(([header, ""] + body[0..<3] + ["   ", ""] + body[3...]).joined(separator: "\n") + "\n\n", "blank lines")
        try assertSame(([header] + body).joined(separator: "\n") + "\n" + #"{"t":9,"op":"a","att"#, "a torn last line")
        try assertSame(([header] + body[0..<5] + [#"{"t":9,"op":"a","att"#] + body[5...]).joined(separator: "\n") + "\n", "a broken line inside")
        try assertSame(([header] + body).joined(separator: "\n") + "\n" + #"{"t":9,"op":"a","att"# + "\n", "a broken last line that has its newline")
        try assertSame(header + "\n", "only the header")
        try assertSame("", "an empty file")
        try assertSame(body.joined(separator: "\n"), "no header")
        try assertSame(([header, body[0], "\u{FF}not utf-8"]).joined(separator: "\n"), "not UTF-8")
        let long = EventLog.line(for: RequestEvent(time: 1, operationID: "long", attempt: 1,
                                                   payload: .retryScheduled(delay: 1, reason: String(repeating: "x", count: 3000))))
        try assertSame(([header] + body[0..<2] + [long] + body[2...]).joined(separator: "\n") + "\n", "a line longer than several pieces")
    }

    /// Nothing before a bad line is lost: its piece's good lines come first, then the error.
    /// Before: a 32 MB HAR named `.jsonl` took 8.5 s and 1 GB to be refused at line 1 (each
    /// piece of a long line was scanned again). Now a line past 64 MiB is refused as soon as
    /// the reader has that much of it, by both readers, naming the line.
    func testALinePastTheLimitIsRefusedByBothReadersNamingIt() throws {
        let long = "{\"log\": \"" + String(repeating: "x", count: EventLogLines.maxLineBytes + 10) + "\"}"
        let path = try write(([header] + lines(3) + [long] + lines(2)).joined(separator: "\n") + "\n")
        let expected = "line 5 is longer than 64 MiB, the most a recording's line may be: is this a reqtop recording? (a HAR file must end in .har)"
        XCTAssertThrowsError(try EventLogFile.read(path: path)) { XCTAssert("\($0)".hasSuffix(expected), "\($0)") }
        let stream = try EventLogStream(path: path, pieceSize: 1 << 20)
        var events = 0
        XCTAssertThrowsError(try { while let batch = try stream.next() { events += batch.count } }()) { XCTAssert("\($0)".hasSuffix(expected), "\($0)") }
        XCTAssertEqual(events, 3, "the events before it come first")
        XCTAssertLessThanOrEqual(stream.lineCount, 5)
    }

    func testTheEventsBeforeABadLineComeFirstThenTheError() throws {
        let body = lines(40)
        let path = try write(([header] + body[0..<5] + [#"{"t":9,"op":"a","att"#] + body[5...]).joined(separator: "\n") + "\n")
        let expected = try EventLogFile.parse(Data(([header] + body[0..<5]).joined(separator: "\n").utf8), file: path).events
        for pieceSize in [16, 1 << 20] {
            let stream = try EventLogStream(path: path, pieceSize: pieceSize)
            var events: [RequestEvent] = []
            XCTAssertThrowsError(try { while let batch = try stream.next() { events += batch } }()) { error in
                XCTAssert("\(error)".contains("line 7"), "\(error)")
            }
            XCTAssertEqual(events, expected, "pieces of \(pieceSize)")
        }
    }

    func testAFolderAndAMissingFileAreNamedAsTheWholeReaderNamesThem() throws {
        try assertSame("", "warm-up")
        let folder = FileManager.default.temporaryDirectory.path
        for path in [folder, "/nonexistent/\(UUID().uuidString).jsonl"] {
            guard case .failure(let a) = whole(path), case .failure(let b) = streamed(path, pieceSize: 64) else {
                return XCTFail("\(path) read")
            }
            XCTAssertEqual(a, b)
        }
    }

    /// Reading 20,000 events (in pieces of 64 KiB) in pieces keeps no more than a piece of the file at once: the
    /// caller decides what to keep.
    func testEveryEventOfALargeFileComesInOrder() throws {
        let body = lines(20_000)
        let path = try write(([header] + body).joined(separator: "\n") + "\n")
        let stream = try EventLogStream(path: path, pieceSize: 1 << 16)
        var count = 0, last = -1.0
        while let batch = try stream.next() {
            for event in batch {
                XCTAssertGreaterThanOrEqual(event.time, last)
                last = event.time
                count += 1
            }
        }
        XCTAssertEqual(count, 20_000)
        XCTAssertEqual(stream.lineCount, 20_001)
    }
}
