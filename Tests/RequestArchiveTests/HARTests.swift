import Foundation
@testable import RequestArchive
import RequestOperations
import XCTest

final class HARImportTests: XCTestCase {
    func fixture(_ name: String) throws -> String {
        try XCTUnwrap(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil)?.path, name)
    }

    func finished(_ result: HARImport.Result) -> [(String, RequestOutcome, Int?)] {
        result.events.compactMap { event in
            if case .finished(let outcome, let status, _, _, _) = event.payload { return (event.operationID, outcome, status) }
            return nil
        }
    }

    func testRealFilesFromSixTools() throws {
        let expected: [(String, Int)] = [("chrome.har", 3), ("charles.har", 1), ("insomnia.har", 1), ("postdata.har", 1),
                                         ("head-content-length.har", 1), ("with-bom.har", 1), ("successful_log.har", 2),
                                         ("error_log.har", 2), ("incomplete_log.har", 4)]
        for (name, entries) in expected {
            let result = try HARImport.read(path: try fixture(name))
            XCTAssertEqual(result.entryCount, entries, name)
            XCTAssertEqual(finished(result).count, entries, name)
            XCTAssertEqual(result.events.map(\.time), result.events.map(\.time).sorted(), "\(name): on one timeline")
            XCTAssertEqual(result.events.first?.time, 0, name)
        }
    }

    /// The bodies browsers and proxies saved come in as `responseBody` events: Charles' as
    /// text, Chrome's as base64 (a page and a PNG), whole under the cap.
    func testSavedBodiesFromOtherToolsAreShown() throws {
        func bodies(_ name: String) throws -> [(Data, Int, String?)] {
            try HARImport.read(path: try fixture(name)).events.compactMap { event in
                if case .responseBody(.bytes(let data), let total, _, let type) = event.payload { return (data, total, type) }
                return nil
            }
        }
        let charles = try bodies("charles.har")
        XCTAssertEqual(charles.count, 1)
        XCTAssertTrue(String(decoding: charles[0].0, as: UTF8.self).hasPrefix("<!DOCTYPE html>"))
        let chrome = try bodies("chrome.har")
        XCTAssertEqual(chrome.map(\.2), ["text/html", "image/png"])
        XCTAssertEqual(chrome.map(\.1), [23_866, 7108], "base64 decoded to the sizes the HAR states")
        XCTAssertEqual(Array(chrome[1].0.prefix(4)), [0x89, 0x50, 0x4E, 0x47], "the PNG's own bytes")
    }

    func testStatusesSizesAndTimings() throws {
        let charles = try HARImport.read(path: try fixture("charles.har"))
        XCTAssertEqual(finished(charles).first?.1, .success)
        XCTAssertEqual(finished(charles).first?.2, 200)
        // Charles: dns 43 + connect 37 + ssl 26 ms before the request; send 1, wait 24, receive 2.
        let response = try XCTUnwrap(charles.events.first { $0.payload.name == "response" })
        XCTAssertEqual(response.time, (43 + 37 + 26 + 1 + 24) / 1000.0, accuracy: 0.0001)
        let post = try HARImport.read(path: try fixture("postdata.har"))
        guard case .queued(let method, _, _, _, let body, _)? = post.events.first?.payload, case .bytes(let data)? = body else { return XCTFail() }
        XCTAssertEqual(method, "POST")
        XCTAssertEqual(data.count, 1310, "postData.text is the body")
        XCTAssert(String(decoding: data, as: UTF8.self).hasPrefix(#"{"metadata":{"pageViewId":1689428126308"#))
    }

    func testFailedAndIncompleteEntriesAreFailures() throws {
        for name in ["error_log.har", "incomplete_log.har"] {
            let result = try HARImport.read(path: try fixture(name))
            // status 0 (no response) and error_log's second entry, a 405, are failures.
            XCTAssert(finished(result).allSatisfy { $0.1 == .failure && ($0.2 == nil || $0.2 == 405) }, name)
            XCTAssert(result.events.contains { if case .taskCompleted(let error?) = $0.payload { error.code == -1 } else { false } }, name)
        }
    }

    func testTheLargerFirefoxAndSafariFiles() throws {
        XCTAssertEqual(try HARImport.read(path: try fixture("firefox.har")).entryCount, 14)
        XCTAssertEqual(try HARImport.read(path: try fixture("safari.har")).entryCount, 19)
    }

    func testBrokenFilesNameTheFileAndTheJSONPath() throws {
        XCTAssertThrowsError(try HARImport.read(path: try fixture("brokenfile.har"))) { error in
            XCTAssert("\(error)".hasSuffix("brokenfile.har: not valid JSON (expected ',' or '}', found '\"' at line 5, column 1)"), "\(error)")
        }
        func error(_ json: String) -> String {
            do {
                _ = try HARImport.parse(Data(json.utf8), file: "x.har")
                return "parsed"
            } catch {
                return "\(error)"
            }
        }
        XCTAssertEqual(error("[]"), #"x.har: $: expected a HAR object {"log": {...}}, found an array"#)
        XCTAssertEqual(error("{}"), #"x.har: $.log: missing; expected an object with "entries""#)
        XCTAssertEqual(error(#"{"log": {"entries": {}}}"#), "x.har: $.log.entries: expected an array of entries, found an object")
        XCTAssertEqual(error(#"{"log": {"entries": [{"startedDateTime": "yesterday", "request": {"method": "GET", "url": "http://a/"}, "response": {"status": 200}}]}}"#),
                       #"x.har: $.log.entries[0].startedDateTime: "yesterday" is not an ISO 8601 date"#)
        XCTAssertEqual(error(#"{"log": {"entries": [{"startedDateTime": "2023-01-01T00:00:00Z", "request": {"method": "GET", "url": "http://a/"}, "response": {"status": "200"}}]}}"#),
                       "x.har: $.log.entries[0].response.status: expected a number, found a string")
        // What was found is read from the document, not from DecodingError's words.
        XCTAssertEqual(error(#"{"log": {"entries": [{"startedDateTime": "2023-01-01T00:00:00Z", "request": {"method": true, "url": "http://a/"}, "response": {"status": 200}}]}}"#),
                       "x.har: $.log.entries[0].request.method: expected a string, found a boolean")
        XCTAssertEqual(error(#"{"log": {"entries": [{"startedDateTime": "2023-01-01T00:00:00Z", "request": {"method": "GET", "url": ["http://a/"]}, "response": {"status": 200}}]}}"#),
                       "x.har: $.log.entries[0].request.url: expected a string, found an array")
        XCTAssertEqual(error(#"{"log": 7}"#), #"x.har: $.log: expected an object with "entries", found a number"#)
        XCTAssertEqual(error(#"{"log": {"entries": [{"startedDateTime": "2023-01-01T00:00:00Z", "request": {"url": "http://a/"}, "response": {"status": 200}}]}}"#),
                       "x.har: $.log.entries[0].request.method: missing; expected a string")
        // Numbers out of range are bad input where they are read (1e19 trapped the import).
        let entry = #"{"startedDateTime": "2023-01-01T00:00:00Z", "request": {"method": "GET", "url": "http://a/"}, "#
        XCTAssertEqual(error(#"{"log": {"entries": ["# + entry + #""time": 1e19, "response": {"status": 200}}]}}"#),
                       "x.har: $.log.entries[0].time: expected milliseconds from -1 to 1000000000000, found 1e+19")
        XCTAssertEqual(error(#"{"log": {"entries": ["# + entry + #""response": {"status": 1e19}}]}}"#),
                       "x.har: $.log.entries[0].response.status: expected a status from -1 to 999, found 1e+19")
        XCTAssertEqual(error(#"{"log": {"entries": ["# + entry + #""timings": {"wait": 1e19}, "response": {"status": 200}}]}}"#),
                       "x.har: $.log.entries[0].timings.wait: expected milliseconds from -1 to 1000000000000, found 1e+19")
    }

    func testDatesAsToolsWriteThem() {
        let utc = HARDate.parse("2023-03-30T04:39:18.981Z")!
        XCTAssertEqual(HARDate.parse("2023-03-29T21:39:18.981-07:00")!.timeIntervalSince(utc), 0, accuracy: 0.0005)
        XCTAssertEqual(HARDate.parse("2023-03-30T04:39:18.981123+00:00")!.timeIntervalSince(utc), 0.000123, accuracy: 0.00001)
        XCTAssertNil(HARDate.parse("30/03/2023"))
    }
}

final class HARExportTests: XCTestCase {
    /// Two operations: one retried once then fine, one that never got a response.
    let events: [RequestEvent] = [
        RequestEvent(time: 0, operationID: "a", attempt: 1, payload: .queued(method: "GET", url: "http://h/x?page=2", headers: ["Accept": "*/*"], maxAttempts: 3)),
        RequestEvent(time: 0.01, operationID: "a", attempt: 1, payload: .started),
        RequestEvent(time: 0.02, operationID: "a", attempt: 1, payload: .taskCreated(taskIdentifier: 1, url: "http://h/x?page=2")),
        RequestEvent(time: 0.10, operationID: "a", attempt: 1, payload: .response(status: 503, headers: ["Retry-After": "1"], expectedBytes: 5)),
        RequestEvent(time: 0.11, operationID: "a", attempt: 1, payload: .data(bytes: 5)),
        RequestEvent(time: 0.12, operationID: "a", attempt: 1, payload: .taskCompleted(error: nil)),
        RequestEvent(time: 0.12, operationID: "a", attempt: 1, payload: .retryScheduled(delay: 1, reason: "status 503; Retry-After 1s")),
        RequestEvent(time: 1.12, operationID: "a", attempt: 2, payload: .started),
        RequestEvent(time: 1.13, operationID: "a", attempt: 2, payload: .taskCreated(taskIdentifier: 2, url: "http://h/x?page=2")),
        RequestEvent(time: 1.14, operationID: "a", attempt: 2, payload: .sent),  // the NIO transport says when the request was written
        RequestEvent(time: 1.20, operationID: "a", attempt: 2, payload: .response(status: 200, headers: ["Content-Type": "text/plain"], expectedBytes: 2)),
        RequestEvent(time: 1.25, operationID: "a", attempt: 2, payload: .data(bytes: 2)),
        RequestEvent(time: 1.25, operationID: "a", attempt: 2, payload: .taskCompleted(error: nil)),
        RequestEvent(time: 1.25, operationID: "a", attempt: 2, payload: .finished(outcome: .success, status: 200, attempts: 2, duration: 1.24, reason: nil)),
        RequestEvent(time: 0.5, operationID: "b", attempt: 1, payload: .queued(method: "POST", url: "http://down/", headers: [:], maxAttempts: 1)),
        RequestEvent(time: 0.5, operationID: "b", attempt: 1, payload: .started),
        RequestEvent(time: 0.5, operationID: "b", attempt: 1, payload: .taskCreated(taskIdentifier: 3, url: "http://down/")),
        RequestEvent(time: 0.6, operationID: "b", attempt: 1, payload: .taskCompleted(error: TransportError(code: -1004, message: "cannot connect"))),
        RequestEvent(time: 0.6, operationID: "b", attempt: 1, payload: .finished(outcome: .failure, status: nil, attempts: 1, duration: 0.1, reason: "not retryable")),
    ]

    func testOneEntryPerAttemptWithTheRequiredFieldsAndSpecTimings() throws {
        let document = HARExport.document(events: events, startedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let log = try XCTUnwrap(document["log"] as? [String: Any])
        XCTAssertEqual(log["version"] as? String, "1.2")
        XCTAssertEqual((log["creator"] as? [String: Any])?["name"] as? String, "reqtop")
        let entries = try XCTUnwrap(log["entries"] as? [[String: Any]])
        XCTAssertEqual(entries.count, 3)
        for entry in entries {
            for key in ["startedDateTime", "time", "request", "response", "cache", "timings"] {
                XCTAssertNotNil(entry[key], key)
            }
            let request = try XCTUnwrap(entry["request"] as? [String: Any])
            for key in ["method", "url", "httpVersion", "cookies", "headers", "queryString", "headersSize", "bodySize"] {
                XCTAssertNotNil(request[key], "request.\(key)")
            }
            let response = try XCTUnwrap(entry["response"] as? [String: Any])
            for key in ["status", "statusText", "httpVersion", "cookies", "headers", "content", "redirectURL", "headersSize", "bodySize"] {
                XCTAssertNotNil(response[key], "response.\(key)")
            }
            let timings = try XCTUnwrap(entry["timings"] as? [String: Double])
            for key in ["send", "wait", "receive"] { XCTAssertGreaterThanOrEqual(timings[key] ?? -1, 0, key) }
            let sum = ["blocked", "dns", "connect", "send", "wait", "receive"].compactMap { timings[$0] }.filter { $0 >= 0 }.reduce(0, +)
            XCTAssertEqual(entry["time"] as? Double ?? -1, sum, accuracy: 0.001, "time is the sum of the timings")
        }
        let first = entries[0]
        XCTAssertEqual((first["response"] as? [String: Any])?["status"] as? Int, 503)
        XCTAssertEqual(((first["timings"] as? [String: Double])?["wait"])!, 80, accuracy: 0.001)
        XCTAssertEqual(((first["timings"] as? [String: Double])?["send"])!, 0, "no sent event: no send time")
        let second = try XCTUnwrap(entries.first { ($0["_reqtop"] as? [String: Any])?["attempt"] as? Int == 2 })
        XCTAssertEqual(((second["timings"] as? [String: Double])?["send"])!, 10, accuracy: 0.001, "taskCreated to sent")
        XCTAssertEqual(((second["timings"] as? [String: Double])?["wait"])!, 60, accuracy: 0.001, "sent to response")
        let reqtop = try XCTUnwrap(first["_reqtop"] as? [String: Any])
        XCTAssertEqual(reqtop["op"] as? String, "a")
        XCTAssertEqual(reqtop["attempt"] as? Int, 1)
        XCTAssertEqual(reqtop["retryDelay"] as? Double, 1)
        XCTAssertEqual(reqtop["reason"] as? String, "status 503; Retry-After 1s")
        XCTAssertEqual((first["request"] as? [String: Any])?["queryString"] as? [[String: String]], [["name": "page", "value": "2"]])
        let failed = entries[1]
        XCTAssertEqual((failed["response"] as? [String: Any])?["status"] as? Int, 0)
        XCTAssertEqual(failed["_error"] as? String, "-1004 cannot connect")
        XCTAssertEqual(failed["startedDateTime"] as? String, "2023-11-14T22:13:20.500Z")
    }

    /// With `connection` events (the NIO transport): a new connection's time before it is
    /// `connect`; a reused one's is waiting for it, counted in `blocked`; the entry names it.
    func testAConnectionSplitsConnectFromBlockedAndIsNamed() throws {
        func attempt(_ number: Int, from start: TimeInterval, reused: Bool) -> [RequestEvent] {
            [RequestEvent(time: start, operationID: "c", attempt: number, payload: .started),
             RequestEvent(time: start + 0.001, operationID: "c", attempt: number, payload: .taskCreated(taskIdentifier: number, url: "http://h/")),
             RequestEvent(time: start + 0.011, operationID: "c", attempt: number, payload: .connection(id: 7, reused: reused)),
             RequestEvent(time: start + 0.012, operationID: "c", attempt: number, payload: .sent),
             RequestEvent(time: start + 0.020, operationID: "c", attempt: number, payload: .response(status: 503, headers: [:], expectedBytes: nil)),
             RequestEvent(time: start + 0.020, operationID: "c", attempt: number, payload: .taskCompleted(error: nil))]
        }
        let events = [RequestEvent(time: 0, operationID: "c", attempt: 1, payload: .queued(method: "GET", url: "http://h/", headers: [:], maxAttempts: 2))]
            + attempt(1, from: 0, reused: false) + attempt(2, from: 1, reused: true)
        let document = HARExport.document(events: events, startedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let entries = try XCTUnwrap((document["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        XCTAssertEqual(entries.count, 2)
        let (new, reused) = (try XCTUnwrap(entries[0]["timings"] as? [String: Double]), try XCTUnwrap(entries[1]["timings"] as? [String: Double]))
        XCTAssertEqual(new["blocked"]!, 1, accuracy: 0.001)
        XCTAssertEqual(new["connect"]!, 10, accuracy: 0.001, "task made to connection given")
        XCTAssertEqual(new["send"]!, 1, accuracy: 0.001, "connection given to request written")
        XCTAssertEqual(reused["connect"], -1, "no connection was made")
        XCTAssertEqual(reused["blocked"]!, 11, accuracy: 0.001, "the wait for a free connection is blocked time")
        XCTAssertEqual(reused["send"]!, 1, accuracy: 0.001)
        for entry in entries {
            XCTAssertEqual(entry["connection"] as? String, "7")
            let timings = try XCTUnwrap(entry["timings"] as? [String: Double])
            XCTAssertEqual(entry["time"] as? Double ?? -1, timings.values.filter { $0 >= 0 }.reduce(0, +), accuracy: 0.001, "time is the sum of the timings")
        }
        let imported = try HARImport.parse(try HARExport.data(events: events, startedAt: Date(timeIntervalSince1970: 1_700_000_000)), file: "c.har")
        XCTAssertEqual(imported.events, events, "the events come back whole, the connection's too")
    }

    func testExportThenImportGivesBackTheSameEvents() throws {
        let data = try HARExport.data(events: events, startedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let imported = try HARImport.parse(data, file: "round.har")
        XCTAssertEqual(imported.events, events.sorted { $0.time < $1.time })
        XCTAssertEqual(imported.startedAt?.timeIntervalSince1970 ?? 0, 1_700_000_000, accuracy: 0.001)
    }

    /// Flow-control kinds (held, released, reactors, requeues) come back as themselves: HAR
    /// import reads `_reqtop.events` with the event format's own reader.
    func testFlowControlEventsSurviveTheRoundTrip() throws {
        let held: [RequestEvent] = [
            RequestEvent(time: 0, operationID: "u", attempt: 1, payload: .queued(method: "PUT", url: "http://h/u", headers: [:], maxAttempts: 3)),
            RequestEvent(time: 0, operationID: "u", attempt: 1, payload: .intercepted(by: "batch uploads", command: "hold")),
            RequestEvent(time: 0, operationID: "u", attempt: 1, payload: .held(batch: "uploads")),
            RequestEvent(time: 1, operationID: "u", attempt: 1, payload: .released(batch: "uploads", size: 2)),
            RequestEvent(time: 1, operationID: "u", attempt: 1, payload: .started),
            RequestEvent(time: 1, operationID: "u", attempt: 1, payload: .taskCreated(taskIdentifier: 7, url: "http://h/u")),
            RequestEvent(time: 1.1, operationID: "u", attempt: 1, payload: .response(status: 401, headers: [:], expectedBytes: nil)),
            RequestEvent(time: 1.1, operationID: "u", attempt: 1, payload: .taskCompleted(error: nil)),
            RequestEvent(time: 1.1, operationID: "u", attempt: 1, payload: .reactorStarted(name: "auth", trigger: "status 401")),
            RequestEvent(time: 1.5, operationID: "u", attempt: 1, payload: .reactorFinished(name: "auth", outcome: "success")),
            RequestEvent(time: 1.5, operationID: "u", attempt: 1, payload: .requeued(by: "auth", reason: "after auth ran (status 401)")),
            RequestEvent(time: 1.5, operationID: "u", attempt: 2, payload: .started),
            RequestEvent(time: 1.5, operationID: "u", attempt: 2, payload: .taskCreated(taskIdentifier: 8, url: "http://h/u")),
            RequestEvent(time: 1.6, operationID: "u", attempt: 2, payload: .response(status: 200, headers: [:], expectedBytes: nil)),
            RequestEvent(time: 1.6, operationID: "u", attempt: 2, payload: .taskCompleted(error: nil)),
            RequestEvent(time: 1.6, operationID: "u", attempt: 2, payload: .finished(outcome: .success, status: 200, attempts: 2, duration: 1.6, reason: nil)),
        ]
        let data = try HARExport.data(events: held, startedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let imported = try HARImport.parse(data, file: "flow.har")
        XCTAssertEqual(imported.events.map(\.payload.name), held.map(\.payload.name))
        XCTAssertEqual(imported.events, held)
    }
}

extension HARImportTests {
    /// Before: "not valid JSON (around character 0)". HARP, the JSONP form Firebug's
    /// NetExport writes and harviewer reads, wraps the HAR in a callback.
    func testTheJSONPFormIsRead() throws {
        let har = try Data(contentsOf: URL(fileURLWithPath: try fixture("insomnia.har")))
        for (prefix, suffix) in [("onInputData(", ");"), ("onInputData(", ")"), ("\n  harp.load(", ");\n")] {
            let wrapped = Data(prefix.utf8) + har + Data(suffix.utf8)
            let result = try HARImport.parse(wrapped, file: "page.harp")
            XCTAssertEqual(result.entryCount, 1, prefix)
        }
        XCTAssertThrowsError(try HARImport.parse(Data("onInputData({\"log\": 1}".utf8), file: "torn.harp")) { error in
            XCTAssert("\(error)".hasPrefix("torn.harp: not valid JSON"), "\(error)")
        }
    }
}

extension HARImportTests {
    /// Before: one bad entry rejected the whole file. Now the good ones are imported and each
    /// bad one is named; `strict` keeps the old all-or-nothing.
    func testABadEntryIsSkippedAndNamedUnlessStrict() throws {
        let good = #"{"startedDateTime": "2023-01-01T00:00:00Z", "request": {"method": "GET", "url": "http://a/1"}, "response": {"status": 200}}"#
        let bad = #"{"startedDateTime": "2023-01-01T00:00:01Z", "request": {"method": "GET", "url": "http://a/2"}, "response": {"status": "200"}}"#
        let late = #"{"startedDateTime": "2023-01-01T00:00:02Z", "request": {"method": "GET", "url": "http://a/3"}, "response": {"status": 1e19}}"#
        let data = Data(#"{"log": {"entries": [\#(good), \#(bad), \#(good), \#(late)]}}"#.utf8)
        let result = try HARImport.parse(data, file: "x.har")
        XCTAssertEqual(result.entryCount, 2)
        XCTAssertEqual(result.skipped, ["$.log.entries[1].response.status: expected a number, found a string",
                                        "$.log.entries[3].response.status: expected a status from -1 to 999, found 1e+19"])
        XCTAssertEqual(finished(result).map(\.0), ["entry-1", "entry-3"], "entries keep their numbers")
        XCTAssertThrowsError(try HARImport.parse(data, file: "x.har", strict: true)) { error in
            XCTAssertEqual("\(error)", "x.har: $.log.entries[1].response.status: expected a number, found a string")
        }
    }
}
