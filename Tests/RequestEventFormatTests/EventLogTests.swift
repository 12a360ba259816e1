@testable import RequestEventFormat
import RequestOperations
import XCTest

final class EventLogTests: XCTestCase {
    func testTheHeaderLine() throws {
        let line = EventLog.headerLine(startedAt: Date(timeIntervalSince1970: 1_700_000_000))
        XCTAssertEqual(line, #"{"event":"session","version":1,"startedAt":"2023-11-14T22:13:20.000Z"}"#)
        XCTAssertNil(try EventLog.parse(line: line, lineNumber: 1))
    }

    func testEveryKindIsOneFlatJSONObjectThatReadsBack() throws {
        let payloads: [RequestEvent.Payload] = [
            .queued(method: "GET", url: "http://h/a?b=1", headers: ["Accept": "*/*"], maxAttempts: 4),
            .queued(method: "POST", url: "http://h/", headers: [:], maxAttempts: nil),
            .started,
            .preparationFailed(reason: "no token"),
            .taskCreated(taskIdentifier: 7, url: "http://h/a"),
            .redirect(status: 302, location: "http://h/b"),
            .response(status: 503, headers: ["Retry-After": "2"], expectedBytes: 15),
            .response(status: 200, headers: [:], expectedBytes: nil),
            .data(bytes: 1024),
            .taskCompleted(error: nil),
            .taskCompleted(error: TransportError(code: -1004, message: "cannot connect to host")),
            .validationFailed(reason: "status 503"),
            .retryScheduled(delay: 0.75, reason: "status 503; backoff"),
            .earlyRetry(trigger: "probe", delay: 0.12),
            .cancelled(by: "caller"),
            .finished(outcome: .failure, status: nil, attempts: 3, duration: 4.5, reason: "retries exhausted"),
            .finished(outcome: .success, status: 200, attempts: 1, duration: 0.25, reason: nil),
        ]
        for (index, payload) in payloads.enumerated() {
            let event = RequestEvent(time: 1.25, operationID: "op \"\(index)\"", attempt: 2, payload: payload)
            let line = EventLog.line(for: event)
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], line)
            XCTAssertEqual(object["t"] as? Double, 1.25)
            XCTAssertEqual(object["op"] as? String, "op \"\(index)\"")
            XCTAssertEqual(object["attempt"] as? Int, 2)
            XCTAssertEqual(object["event"] as? String, payload.name)
            XCTAssertEqual(try EventLog.parse(line: line, lineNumber: index), event, line)
        }
    }

    func testContractFieldNames() throws {
        func object(_ payload: RequestEvent.Payload) throws -> [String: Any] {
            let line = EventLog.line(for: RequestEvent(time: 0, operationID: "a", attempt: 1, payload: payload))
            return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        let completed = try object(.taskCompleted(error: TransportError(code: -1001, message: "timed out")))
        XCTAssertEqual((completed["error"] as? [String: Any])?["code"] as? Int, -1001)
        XCTAssert(try object(.taskCompleted(error: nil))["error"] is NSNull)
        XCTAssertEqual(try object(.retryScheduled(delay: 2, reason: "r"))["delay"] as? Double, 2)
        let finished = try object(.finished(outcome: .cancelled, status: nil, attempts: 1, duration: 0.5, reason: nil))
        XCTAssertEqual(finished["outcome"] as? String, "cancelled")
        XCTAssert(finished["status"] is NSNull)
        XCTAssertEqual(finished["attempts"] as? Int, 1)
        XCTAssertEqual(try object(.cancelled(by: "cancelAll"))["by"] as? String, "cancelAll")
        XCTAssertEqual(try object(.earlyRetry(trigger: "manual", delay: 0))["trigger"] as? String, "manual")
    }

    func testStringsAreEscaped() {
        XCTAssertEqual(JSONText.quote("a\"b\\c\nd\u{1}é"), #""a\"b\\c\nd\u0001é""#)
    }

    func testNumbersHaveMicrosecondsAndNoExponent() {
        XCTAssertEqual(JSONText.number(0), "0.0")
        XCTAssertEqual(JSONText.number(1.5), "1.5")
        XCTAssertEqual(JSONText.number(0.0000012), "0.000001")
        XCTAssertEqual(JSONText.number(12345.678901), "12345.678901")
    }

    func testUnknownKindsAreKeptByName() throws {
        let event = try EventLog.parse(line: #"{"t":1,"op":"a","attempt":1,"event":"cachedHit","name":"auth"}"#, lineNumber: 3)
        XCTAssertEqual(event?.payload, .other(name: "cachedHit"))
    }

    func testFlowControlEventsRoundTrip() throws {
        let payloads: [RequestEvent.Payload] = [
            .intercepted(by: "auth", command: "execute"), .held(batch: "uploads"), .released(batch: "uploads", size: 3),
            .reactorStarted(name: "auth", trigger: "status 401"), .reactorWaiting(name: "auth"),
            .reactorFinished(name: "auth", outcome: "success"), .requeued(by: "auth", reason: "after auth ran"),
        ]
        for payload in payloads {
            let event = RequestEvent(time: 1.5, operationID: "a", attempt: 2, payload: payload)
            XCTAssertEqual(try EventLog.parse(line: EventLog.line(for: event), lineNumber: 1), event)
        }
        XCTAssertEqual(EventLog.line(for: RequestEvent(time: 1, operationID: "a", attempt: 1, payload: .released(batch: "b", size: 2))),
                       #"{"t":1.0,"op":"a","attempt":1,"event":"released","batch":"b","size":2}"#)
    }

    func testBrokenLinesNameTheLineAndTheField() {
        XCTAssertThrowsError(try EventLog.parse(line: "{", lineNumber: 4)) { error in
            XCTAssertEqual("\(error)", "line 4: not a JSON object")
        }
        XCTAssertThrowsError(try EventLog.parse(line: #"{"t":1,"op":"a","event":"data","bytes":3}"#, lineNumber: 9)) { error in
            XCTAssertEqual("\(error)", #"line 9: missing field "attempt" (expected an integer)"#)
        }
        XCTAssertThrowsError(try EventLog.parse(line: #"{"t":"x","op":"a","attempt":1,"event":"started"}"#, lineNumber: 2)) { error in
            XCTAssertEqual("\(error)", #"line 2: field "t": expected a number"#)
        }
    }

    /// Numbers from files and sockets are range-checked where they enter: a `t` of 1e19 in
    /// a recording used to reach the monitor and trap it converting to Int.
    func testOutOfRangeNumbersAreRefusedWhereTheyEnter() {
        XCTAssertThrowsError(try EventLog.parse(line: #"{"t":1e19,"op":"a","attempt":1,"event":"started"}"#, lineNumber: 2)) { error in
            XCTAssertEqual("\(error)", #"line 2: field "t": expected seconds from 0 to 1000000000, found 1e+19"#)
        }
        XCTAssertThrowsError(try EventLog.parse(line: #"{"t":-1,"op":"a","attempt":1,"event":"started"}"#, lineNumber: 3))
        XCTAssertThrowsError(try EventLog.parse(line: #"{"t":1,"op":"a","attempt":1e19,"event":"started"}"#, lineNumber: 4)) { error in
            XCTAssertEqual("\(error)", #"line 4: field "attempt": expected an integer"#)
        }
        XCTAssertThrowsError(try EventLog.parse(line: #"{"t":1,"op":"a","attempt":1,"event":"data","bytes":99999999999999999999}"#, lineNumber: 5))
        XCTAssertNotNil(try EventLog.parse(line: #"{"t":999999999.5,"op":"a","attempt":1,"event":"retryScheduled","delay":86400,"reason":"r"}"#, lineNumber: 6))
    }
}
