import Foundation
@testable import RequestArchive
import RequestEventFormat
import RequestOperations
import XCTest

final class RedactorTests: XCTestCase {
    let redactor = Redactor()

    func testCredentialHeadersAreReplacedWhateverTheirCase() {
        let headers = redactor.redact(headers: ["authorization": "Bearer abc", "Cookie": "s=1", "Set-Cookie": "s=2",
                                                "Proxy-Authorization": "Basic x", "Accept": "*/*"])
        XCTAssertEqual(headers, ["authorization": "[redacted]", "Cookie": "[redacted]", "Set-Cookie": "[redacted]",
                                 "Proxy-Authorization": "[redacted]", "Accept": "*/*"])
    }

    func testSecretQueryParametersAreReplacedAndTheRestKept() {
        XCTAssertEqual(redactor.redact(url: "https://h/p?token=abc&page=2&API_KEY=k&password=pw"),
                       "https://h/p?token=%5Bredacted%5D&page=2&API_KEY=%5Bredacted%5D&password=%5Bredacted%5D")
        XCTAssertEqual(redactor.redact(url: "https://h/p?page=2"), "https://h/p?page=2")
        XCTAssertEqual(redactor.redact(url: "not a url"), "not a url")
    }

    func testEveryEventThatCarriesAURLOrHeadersIsRedacted() {
        let secret = "http://h/x?access_token=t0ps3cret"
        let events: [RequestEvent.Payload] = [
            .queued(method: "GET", url: secret, headers: ["Authorization": "Bearer t0ps3cret"], maxAttempts: 3),
            .taskCreated(taskIdentifier: 1, url: secret),
            .redirect(status: 302, location: secret),
            .response(status: 200, headers: ["Set-Cookie": "t0ps3cret"], expectedBytes: nil),
        ]
        for payload in events {
            let line = EventLog.line(for: redactor.redact(RequestEvent(time: 0, operationID: "a", attempt: 1, payload: payload)))
            XCTAssertFalse(line.contains("t0ps3cret"), line)
            XCTAssert(line.contains("redacted"), line)
        }
    }
}

final class EventLogFileTests: XCTestCase {
    func temporaryPath() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rec-\(UUID().uuidString).jsonl").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    func testTheWriterRecordsEveryEventRedactedAndTheReaderReadsThemBack() throws {
        let path = temporaryPath()
        let hub = EventHub()
        let writer = try EventLogWriter(path: path, hub: hub)
        hub.publish(operation: "a", attempt: 1, .queued(method: "GET", url: "http://h/?token=s3cret", headers: ["Cookie": "s3cret"], maxAttempts: 2))
        hub.publish(operation: "a", attempt: 1, .started)
        hub.publish(operation: "a", attempt: 1, .finished(outcome: .success, status: 200, attempts: 1, duration: 0.1, reason: nil))
        try writer.finish(hub: hub)
        hub.publish(operation: "b", attempt: 1, .started) // after finish: not recorded

        let text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertFalse(text.contains("s3cret"))
        XCTAssert(text.hasPrefix(#"{"event":"session","version":1,"startedAt":""#))
        XCTAssert(text.split(separator: "\n")[0].hasSuffix(#""redacted":true}"#))
        let log = try EventLogFile.read(path: path)
        XCTAssertEqual(log.redacted, true)
        XCTAssertEqual(log.events.map(\.payload.name), ["queued", "started", "finished"])
        XCTAssertNil(log.tornLastLine)
    }

    func testNoRedactKeepsSecretsAndSaysSo() throws {
        let path = temporaryPath()
        let hub = EventHub()
        let writer = try EventLogWriter(path: path, hub: hub, redact: false)
        hub.publish(operation: "a", attempt: 1, .queued(method: "GET", url: "http://h/?token=s3cret", headers: [:], maxAttempts: nil))
        try writer.finish(hub: hub)
        let log = try EventLogFile.read(path: path)
        XCTAssertEqual(log.redacted, false)
        XCTAssert(try String(contentsOfFile: path, encoding: .utf8).contains("s3cret"))
    }

    func testATornLastLineIsAcceptedAndReported() throws {
        let text = """
        {"event":"session","version":1,"startedAt":"2026-11-22T10:00:00.000Z"}
        {"t":0.1,"op":"a","attempt":1,"event":"started"}
        {"t":0.2,"op":"a","attempt":1,"event":"fini
        """
        let log = try EventLogFile.parse(Data(text.utf8), file: "cut.jsonl")
        XCTAssertEqual(log.events.count, 1)
        XCTAssertEqual(log.tornLastLine, 3)
    }

    func testABadLineInTheMiddleIsAnErrorNamingTheLine() {
        let text = """
        {"event":"session","version":1}
        {"t":0.1,"op":"a","attempt":1,"event":"started"}
        {"t":"soon","op":"a","attempt":1,"event":"started"}
        {"t":0.3,"op":"a","attempt":1,"event":"started"}

        """
        XCTAssertThrowsError(try EventLogFile.parse(Data(text.utf8), file: "bad.jsonl")) { error in
            XCTAssertEqual("\(error)", #"bad.jsonl: line 3: field "t": expected a number"#)
        }
    }

    func testAStartTimeThatCannotBeReadIsAnErrorNotToday() throws {
        let event = #"{"t":0.1,"op":"a","attempt":1,"event":"started"}"#
        for (value, shown) in [(#""yesterday""#, "'yesterday'"), ("1764482400", "1764482400"), (#""2026-13-01T00:00:00Z""#, "'2026-13-01T00:00:00Z'")] {
            let text = #"{"event":"session","version":1,"startedAt":"# + value + "}\n" + event + "\n"
            XCTAssertThrowsError(try EventLogFile.parse(Data(text.utf8), file: "odd.jsonl")) { error in
                XCTAssertEqual("\(error)", "odd.jsonl: line 1: startedAt \(shown) is not a date and time as recordings write it (2026-11-22T10:00:00.000Z)")
            }
        }
        // Without fractions of a second, and with none at all (a recording written by hand): read.
        let plain = try EventLogFile.parse(Data((#"{"event":"session","version":1,"startedAt":"2026-11-27T00:00:00Z"}"# + "\n" + event + "\n").utf8), file: "a.jsonl")
        XCTAssertEqual(plain.startedAt, Date(timeIntervalSince1970: 1_795_737_600))
        let none = try EventLogFile.parse(Data((#"{"event":"session","version":1}"# + "\n" + event + "\n").utf8), file: "b.jsonl")
        XCTAssertNil(none.startedAt)
    }

    func testFilesThatAreNotRecordings() {
        XCTAssertThrowsError(try EventLogFile.parse(Data(), file: "empty.jsonl")) { error in
            XCTAssertEqual("\(error)", "empty.jsonl: empty: no session header, no events")
        }
        XCTAssertThrowsError(try EventLogFile.parse(Data(#"{"log":{"version":"1.2"}}"#.utf8), file: "x.jsonl")) { error in
            XCTAssert("\(error)".hasPrefix("x.jsonl: line 1: expected the session header"), "\(error)")
        }
        XCTAssertThrowsError(try EventLogFile.parse(Data(#"{"event":"session","version":9}"#.utf8), file: "new.jsonl")) { error in
            XCTAssertEqual("\(error)", "new.jsonl: line 1: version 9 is not supported; this reqtop reads version 1")
        }
        XCTAssertThrowsError(try EventLogFile.read(path: "/no/such/recording.jsonl"))
    }

    func testAByteOrderMarkIsSkipped() throws {
        let data = Data([0xEF, 0xBB, 0xBF]) + Data(#"{"event":"session","version":1}"#.utf8)
        XCTAssertEqual(try EventLogFile.parse(data, file: "bom.jsonl").events.count, 0)
    }

    func testAnUnwritablePathIsAClearError() {
        XCTAssertThrowsError(try EventLogWriter(path: "/no/such/dir/rec.jsonl", hub: EventHub())) { error in
            XCTAssertEqual("\(error)", "/no/such/dir/rec.jsonl: cannot write (the folder /no/such/dir does not exist)")
        }
    }
}
