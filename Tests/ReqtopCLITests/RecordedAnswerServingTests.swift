import FaultServer
import Foundation
import RequestEventFormat
import RequestOperations
import XCTest

/// A recording is input: `serve --from` and `whatif` say again what it holds, and what no
/// server can say (an informational or negative status, framing headers, a header with a
/// line break) is named, never a crash. Before: a recorded 101 tripped a SwiftNIO
/// precondition (SIGILL), a -1 trapped in `HTTPResponseStatus(statusCode:)`, and a header with
/// CR/LF made the server close the connection without an answer.
final class RecordedAnswerServingTests: XCTestCase {
    private func recording(_ answers: [(path: String, status: Int, headers: [String: String], body: String)]) throws -> String {
        let folder = NSTemporaryDirectory() + "serving-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: folder) }
        var lines = [EventLog.headerLine(startedAt: Date(), redacted: true)]
        for (index, answer) in answers.enumerated() {
            let op = "op\(index)", url = "http://upstream.test:80\(answer.path)", t = Double(index) * 0.01
            let events: [RequestEvent] = [
                RequestEvent(time: t, operationID: op, attempt: 1, payload: .queued(method: "GET", url: url, headers: [:], maxAttempts: 1)),
                RequestEvent(time: t, operationID: op, attempt: 1, payload: .taskCreated(taskIdentifier: index, url: url)),
                RequestEvent(time: t, operationID: op, attempt: 1, payload: .response(status: answer.status, headers: answer.headers, expectedBytes: nil)),
                RequestEvent(time: t, operationID: op, attempt: 1, payload: .responseBody(body: .bytes(Data(answer.body.utf8)),
                                                                                             totalBytes: answer.body.utf8.count, truncated: false, mediaType: nil)),
                RequestEvent(time: t, operationID: op, attempt: 1, payload: .taskCompleted(error: nil)),
            ]
            lines += events.map { EventLog.line(for: $0) }
        }
        let path = folder + "/hostile.jsonl"
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func curl(_ url: String) throws -> (status: Int32, head: String, body: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-i", "--max-time", "10", url]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        return (process.terminationStatus, parts.first ?? "", parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    func testStatusesAndHeadersNoServerCanSendAreNamedAndTheServerStaysUp() throws {
        let path = try recording([
            ("/ws", 101, ["Upgrade": "websocket", "Connection": "Upgrade"], ""),
            ("/continue", 100, [:], ""),
            ("/hints", 103, ["Link": "</a.css>; rel=preload"], ""),
            ("/negative", -1, [:], ""),
            ("/huge", 1000, [:], ""),
            ("/framing", 200, ["Transfer-Encoding": "chunked", "Content-Length": "999", "Connection": "close, X-Hop",
                               "X-Hop": "gone", "Keep-Alive": "timeout=5", "X-Kept": "yes"], "five!"),
            ("/crlf", 200, ["X-Bad": "a\r\nX-Injected: 1", "X-Good": "fine"], "body"),
            ("/empty", 204, ["X-Kept": "yes"], "not sent"),
            ("/fine", 200, [:], "ok"),
        ])
        let served = try AttachTests.launch(["serve", "--from", path], runtimeDirectory: NSTemporaryDirectory())
        defer { served.process.terminate(); served.process.waitUntilExit() }
        AttachTests.waitFor("the server's URL") { served.stdout().contains("listening on http://") }
        let base = try XCTUnwrap(served.stdout().split(separator: "\n").first?.split(separator: " ").last.map(String.init))

        for (route, status) in [("/ws", 101), ("/continue", 100), ("/hints", 103)] {
            let answer = try curl(base + route)
            XCTAssert(answer.head.hasPrefix("HTTP/1.1 502"), "\(route): \(answer.head)")
            XCTAssert(answer.head.contains("X-Reqtop-Unservable: recorded status \(status) is informational, not a final answer"), answer.head)
        }
        for (route, status) in [("/negative", -1), ("/huge", 1000)] {
            let answer = try curl(base + route)
            XCTAssert(answer.head.hasPrefix("HTTP/1.1 502"), "\(route): \(answer.head)")
            XCTAssert(answer.head.contains("recorded status \(status) is not an HTTP status"), answer.head)
        }
        let framed = try curl(base + "/framing")
        XCTAssert(framed.head.hasPrefix("HTTP/1.1 200"), framed.head)
        XCTAssertEqual(framed.body, "five!", "its own framing: the length of the body it sends")
        XCTAssert(framed.head.contains("Content-Length: 5") && framed.head.contains("X-Kept: yes"), framed.head)
        for gone in ["Transfer-Encoding", "X-Hop", "Keep-Alive", "Content-Length: 999"] {
            XCTAssertFalse(framed.head.contains(gone), "\(gone) is hop-by-hop or wrong: \(framed.head)")
        }
        let crlf = try curl(base + "/crlf")
        XCTAssert(crlf.head.hasPrefix("HTTP/1.1 200"), "an answer, not a closed connection: \(crlf.head)")
        XCTAssertEqual(crlf.body, "body")
        XCTAssert(crlf.head.contains("X-Good: fine") && crlf.head.contains("X-Reqtop-Dropped-Headers: 1"), crlf.head)
        XCTAssertFalse(crlf.head.contains("X-Injected"), crlf.head)
        let empty = try curl(base + "/empty")
        XCTAssert(empty.head.hasPrefix("HTTP/1.1 204") && empty.head.contains("X-Kept: yes"), empty.head)
        XCTAssertEqual(empty.body, "", "204 has no body")
        XCTAssertEqual(try curl(base + "/fine").body, "ok", "still serving")
        XCTAssertTrue(served.process.isRunning, "no crash: \(served.stderr())")
        XCTAssert(served.stderr().contains("op0 attempt 1 cannot be answered as recorded: recorded status 101 is informational, not a final answer; a client gets a 502 that says so"),
                  served.stderr())
    }

    /// Before: `whatif` printed an id holding `ESC ] 0 ; … BEL` raw (it set the window title;
    /// `ESC ] 52` writes the clipboard), and the id, sent in a header, failed every attempt
    /// with -1011. A recorded 101 crashed the recorded-answer server.
    func testWhatIfOnAHostileRecordingNamesWhatItCannotServeAndPrintsNoControlCharacter() throws {
        let folder = NSTemporaryDirectory() + "hostile-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let id = #"ws\u001b]0;PWNED\u0007\u001b]52;c;aGk=\u0007"#
        var lines = [#"{"event":"session","version":1,"startedAt":"2026-11-25T10:00:00.000Z"}"#]
        for (op, path, status, at) in [(id, "/ws", 101, 0.1), ("plain", "/ok", 200, 0.3)] {
            lines += [
                #"{"t":\#(at),"op":"\#(op)","attempt":1,"event":"queued","method":"GET","url":"http://127.0.0.1:9\#(path)"}"#,
                #"{"t":\#(at),"op":"\#(op)","attempt":1,"event":"taskCreated","task":1,"url":"http://127.0.0.1:9\#(path)"}"#,
                #"{"t":\#(at + 0.1),"op":"\#(op)","attempt":1,"event":"response","status":\#(status)}"#,
                #"{"t":\#(at + 0.1),"op":"\#(op)","attempt":1,"event":"taskCompleted"}"#,
                #"{"t":\#(at + 0.1),"op":"\#(op)","attempt":1,"event":"finished","outcome":"success","attempts":1,"duration":0.1}"#,
            ]
        }
        let recording = folder + "/rec.jsonl"
        try (lines.joined(separator: "\n") + "\n").write(toFile: recording, atomically: true, encoding: .utf8)
        for arguments in [["whatif", recording], ["whatif", recording, "--json"], ["diff", recording, recording]] {
            let run = try reqtop(arguments)
            XCTAssert([0, 1].contains(run.status), "\(arguments): \(run.stderr)")
            for (name, text) in [("stdout", run.stdout), ("stderr", run.stderr)] {
                XCTAssertFalse(text.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{07}" }, "\(arguments) \(name) carries a raw control character: \(text)")
            }
            if arguments[0] == "whatif", arguments.count == 2 {
                XCTAssert(run.stderr.contains(#"ws\x1b]0;PWNED\x07\x1b]52;c;aGk=\x07 attempt 1 cannot be answered as recorded: recorded status 101"#), run.stderr)
                XCTAssert(run.stdout.contains("failure 502"), "the stand-in answer reached the re-run (not -1011): \(run.stdout)")
            }
        }
        let events = try String(contentsOfFile: folder + "/rec.whatif.jsonl", encoding: .utf8)
        XCTAssertFalse(events.contains("-1011"), events)
    }

    func testTheFramingOfOneAnswer() {
        XCTAssertEqual(RecordedAnswerFraming.frame(status: 101, headers: [], body: []),
                       .unservable(reason: "recorded status 101 is informational, not a final answer"))
        XCTAssertEqual(RecordedAnswerFraming.frame(status: -1, headers: [], body: []), .unservable(reason: "recorded status -1 is not an HTTP status"))
        XCTAssertEqual(RecordedAnswerFraming.frame(status: 304, headers: [("ETag", "\"x\"")], body: Array("x".utf8)),
                       .answer(status: 304, headers: [.init("ETag", "\"x\"")], body: [], dropped: 0))
        XCTAssertEqual(RecordedAnswerFraming.frame(status: 200, headers: [("Bad Name", "v"), ("X-Nul", "a\u{0}b"), ("TE", "trailers")], body: []),
                       .answer(status: 200, headers: [], body: [], dropped: 2))
    }
}
