import Foundation
@testable import ReqtopApplication
@testable import ReqtopCLI
import RequestArchive
import RequestEventFormat
import RequestMonitor
import RequestOperations
import Synchronization
import XCTest

/// A recording played while it is read: the player gets every event in order, a jump back
/// starts over from the file's first line, and the summary counts each operation once.
final class StreamingReplayTests: XCTestCase {
    private func recording(operations: Int) throws -> (path: String, events: [RequestEvent]) {
        var events: [RequestEvent] = []
        for index in 0..<operations {
            let id = "op-\(index)", t = Double(index) * 0.01
            events += [RequestEvent(time: t, operationID: id, attempt: 1, payload: .queued(method: "GET", url: "http://h/\(index)", headers: [:], maxAttempts: 1)),
                       RequestEvent(time: t, operationID: id, attempt: 1, payload: .started),
                       RequestEvent(time: t + 0.005, operationID: id, attempt: 1, payload: .response(status: 200, headers: [:], expectedBytes: nil)),
                       RequestEvent(time: t + 0.005, operationID: id, attempt: 1,
                                    payload: .finished(outcome: index % 10 == 0 ? .failure : .success, status: 200, attempts: 1, duration: 0.005, reason: nil))]
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).jsonl").path
        let text = EventLog.headerLine(startedAt: Date(), redacted: true) + "\n" + events.map(EventLog.line(for:)).joined(separator: "\n") + "\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        // As the file has them (times are written to the microsecond).
        return (path, try EventLogFile.read(path: path).events)
    }

    func testEveryEventInOrderThenBackToTheStartAndTheSummaryCountsOnce() throws {
        let (path, events) = try recording(operations: 5_000)
        let source = StreamingReplaySource(path: path)
        defer { source.stop() }
        let received = Mutex<[RequestEvent]>([])
        let resets = Mutex(0)
        let player = ReplayPlayer(source: source) { output in
            switch output {
            case .events(let batch): received.withLock { $0 += batch }
            case .reset:
                resets.withLock { $0 += 1 }
                received.withLock { $0 = [] }
            }
        }
        player.jumpToEnd()
        XCTAssertEqual(received.withLock { $0.count }, events.count)
        XCTAssertTrue(received.withLock { $0 } == events, "every event, in the file's order")
        XCTAssertTrue(player.isAtEnd)
        XCTAssertEqual(player.duration, events.last!.time, accuracy: 1e-6)
        XCTAssertTrue(player.isDurationKnown)

        player.seek(to: 10)
        XCTAssertEqual(resets.withLock { $0 }, 1)
        XCTAssertTrue(received.withLock { $0 } == events.filter { $0.time <= 10 }, "back: from the first line up to the new playhead")
        XCTAssertEqual(player.playhead, 10, accuracy: 1e-6)
        player.jumpToEnd()
        XCTAssertTrue(received.withLock { $0 } == events)

        let outcome = source.outcome
        XCTAssertTrue(outcome.reachedEnd)
        XCTAssertNil(outcome.error)
        XCTAssertEqual(outcome.tally.operations, 5_000, "read twice, counted once")
        XCTAssertEqual(outcome.tally.count(.failure), 500)
        XCTAssertEqual(outcome.tally.attempts, 5_000)
    }

    /// A bad line halfway stops the reading there: the player gets every event before it (the
    /// good lines of its piece too) and the error names the line, for the command's exit status 2.
    func testABadLineStopsTheReadingAndIsNamed() throws {
        let (path, events) = try recording(operations: 100)
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines[201] = #"{"t":"soon","op":"x","attempt":1,"event":"started"}"#
        try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: path))
        let source = StreamingReplaySource(path: path)
        defer { source.stop() }
        let received = Mutex<[RequestEvent]>([])
        let player = ReplayPlayer(source: source) { output in
            if case .events(let batch) = output { received.withLock { $0 += batch } }
        }
        player.jumpToEnd()
        XCTAssertTrue(received.withLock { $0 } == Array(events.prefix(200)), "every event before the bad line, none after it")
        let error = try XCTUnwrap(source.outcome.error)
        XCTAssert(error.description.contains("line 202"), error.description)
        XCTAssertEqual(player.playhead, events[199].time, accuracy: 1e-6, "the playhead stands at the last event read, not past it")
        let status = ReplayCommands(player: player).status().text
        XCTAssert(status.contains("stopped reading: line 202"), "the header says the replay stops there, not just END: \(status)")
    }
}
