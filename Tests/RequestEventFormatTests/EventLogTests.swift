@testable import RequestEventFormat
import HTTPTypes
import RequestOperations
import XCTest

final class EventLogTests: XCTestCase {
    func testTheHeaderLine() throws {
        let line = EventLog.headerLine(startedAt: Date(timeIntervalSince1970: 1_700_000_000))
        XCTAssertEqual(line, #"{"event":"session","version":1,"startedAt":"2023-11-14T22:13:20.000Z"}"#)
        XCTAssertNil(try EventLog.parse(line: line, lineNumber: 1))
    }

    /// The start time is written as Foundation's `ISO8601DateFormatter` wrote it (milliseconds
    /// rounded, UTC), without opening ICU: the formatter is the reference, over edges (a
    /// fraction that rounds up into the next day, leap days, year 9999) and random dates
    /// since 1970 (before it, ICU rounds a half millisecond the other way).
    func testTheStartTimeIsWrittenAsTheFormatterWroteIt() {
        let reference = ISO8601DateFormatter()
        reference.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var random = SystemRandomNumberGenerator()
        let edges: [TimeInterval] = [0, 1.5, 0.0004, 0.0005, 86_399.9996, 951_782_400.0005, 1_764_444_541.3159999, 4_102_444_799.9995, 253_402_300_799.999]
        for seconds in edges + (0..<5_000).map({ _ in TimeInterval.random(in: 0...5e9, using: &random) }) {
            let date = Date(timeIntervalSince1970: seconds)
            XCTAssertEqual(EventLog.iso8601(date), reference.string(from: date), "\(seconds)")
        }
        // A date read from a file may be far out or not finite: as the formatter writes it, no trap.
        for seconds in [1e13, 1e18, -1e15, .infinity, .nan] {
            let date = Date(timeIntervalSince1970: seconds)
            XCTAssertEqual(EventLog.iso8601(date), reference.string(from: date), "\(seconds)")
        }
    }

    func testEveryKindIsOneFlatJSONObjectThatReadsBack() throws {
        let payloads: [RequestEvent.Payload] = [
            .queued(method: "GET", url: "http://h/a?b=1", headers: ["Accept": "*/*"], maxAttempts: 4),
            .queued(method: "POST", url: "http://h/", headers: [:], maxAttempts: nil),
            .queued(method: "POST", url: "http://h/", headers: ["Content-Type": "application/json"], maxAttempts: 5,
                    body: .bytes(Data(#"{"a":"é\n"}"#.utf8)),
                    options: RecordedOptions(attemptTimeout: 2.5, deadline: 300,
                                             retry: RetrySettings(maxAttempts: 5, baseDelay: 0.25, multiplier: 3, maxDelay: 10,
                                                                  jitter: .decorrelated, retryNonIdempotent: true, retryBudget: nil),
                                             earlyRetry: false)),
            .queued(method: "PUT", url: "http://h/", headers: [:], maxAttempts: nil, body: .bytes(Data([0, 0xFF, 0x10])),
                    options: RecordedOptions(deadline: 300)),
            .queued(method: "PUT", url: "http://h/", headers: [:], maxAttempts: 3, body: .omitted(bytes: 70_000, reason: "over the 65536-byte limit"),
                    options: RecordedOptions(retry: RetrySettings(maxAttempts: 3, baseDelay: 0.5, multiplier: 2, maxDelay: 30,
                                                                  jitter: .equal, retryNonIdempotent: false, retryBudget: 60))),
            .queued(method: "POST", url: "http://h/", headers: [:], maxAttempts: nil, body: .omitted(bytes: nil, reason: "a stream")),
            .queued(method: "PUT", url: "http://h/", headers: [:], maxAttempts: nil, body: .omitted(bytes: nil, reason: "a stream"),
                    options: { var files = RecordedOptions(); (files.saveTo, files.bodyFile) = ("/tmp/a b.bin", "/tmp/up.bin"); return files }()),
            .queued(method: "GET", url: "http://h/", headers: [:], maxAttempts: 1,
                    options: { var proxied = RecordedOptions(); proxied.origin = "curl 4242"; return proxied }()),
            .built(method: "GET", url: "http://h/items/7", headers: ["Authorization": "[redacted]"], body: nil),
            .built(method: "POST", url: "http://h/items", headers: [:], body: .bytes(Data("id=7".utf8))),
            .started,
            .sent,
            .connection(id: 12, reused: true),
            .connection(id: 0, reused: false),
            .connection(id: 4, reused: false, proxy: "127.0.0.1:3128"),
            .preparationFailed(reason: "no token"),
            .taskCreated(taskIdentifier: 7, url: "http://h/a"),
            .taskCreated(taskIdentifier: 8, url: "https://h/a", insecure: true),
            .redirect(status: 307, location: "http+unix://x/s", dropped: ["authorization", "cookie"], refused: "not followed"),
            .redirect(status: 302, location: "http://h/b"),
            .response(status: 503, headers: ["Retry-After": "2"], expectedBytes: 15),
            .response(status: 200, headers: [:], expectedBytes: nil),
            .response(status: 200, headers: [:], expectedBytes: 5, httpVersion: "HTTP/2.0"),
            .data(bytes: 1024),
            .uploaded(bytes: 65_536, totalBytes: 1_048_576),
            .uploaded(bytes: 2_097_152, totalBytes: nil),
            .responseBody(body: .bytes(Data("{\"ok\":true}".utf8)), totalBytes: 11, truncated: false, mediaType: "application/json"),
            .responseBody(body: .bytes(Data([0, 1, 2])), totalBytes: 70_000, truncated: true, mediaType: nil),
            .responseBody(body: .omitted(bytes: 12, reason: "not JSON"), totalBytes: 12, truncated: false, mediaType: "application/json"),
            .requestBody(body: .bytes(Data("chunk one".utf8)), totalBytes: 100_000, truncated: true, mediaType: "text/plain"),
            .requestBody(body: .bytes(Data([0, 255])), totalBytes: 2, truncated: false, mediaType: nil),
            .headerFields(side: .request, fields: FieldMerge.fields([("X-Zeta", "1"), ("X-Dup", "a"), ("x-MiXeD", "b: c"), ("X-Dup", "")])),
            .headerFields(side: .response, fields: FieldMerge.fields([("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")])),
            .messages(fromClient: 3, toClient: 12),
            .trailers(side: .response, fields: FieldMerge.fields([("grpc-status", "0"), ("grpc-message", "")])),
            .trailers(side: .request, fields: FieldMerge.fields([("X-Checksum", "sha-256=abc")])),
            .taskCompleted(error: nil),
            .taskCompleted(error: TransportError(code: -1004, message: "cannot connect to host")),
            .taskCompleted(error: TransportError(code: -1206, message: "asked for a certificate", tls: .clientCertificateRequired)),
            .taskCompleted(error: TransportError(code: -1001, message: "no byte for 60 s (read timeout)", timeout: .read)),
            .validationFailed(reason: "status 503"),
            .retryScheduled(delay: 0.75, reason: "status 503; backoff"),
            .earlyRetry(trigger: "probe", delay: 0.12),
            .hedged(racing: 1, after: 0.25),
            .taskCompleted(error: .hedgeLost(to: 2)),
            .queued(method: "GET", url: "http://h/", headers: [:], maxAttempts: 3, body: nil,
                    options: RecordedOptions(deadline: 300, hedge: .hedge(after: 0.2, max: 2))),
            .cancelled(by: "caller"),
            .retryDenied(reason: "the host's retry budget is spent"), .retryBudget(host: "h:80", left: 3),
            .circuitWaiting(host: "h:80"), .circuitOpened(host: "h:80", reason: "5 failures", until: 12.5), .circuitHalfOpen(host: "h:80"),
            .circuitClosed(host: "h:80", reason: "the probe succeeded"), .rateLimitWaiting(host: "h:80", until: 3),
            .rateLimited(host: "h:80", until: 3, reason: "Retry-After"), .intercepted(by: "auth", command: "hold"),
            .held(batch: "uploads"), .released(batch: "uploads", size: 3), .reactorStarted(name: "auth", trigger: "status 401"),
            .reactorWaiting(name: "auth"), .reactorFinished(name: "auth", outcome: .failure("no token")),
            .requeued(by: "auth", reason: "after auth ran"), .missed(count: 4),
            .injected(fault: "status 503", rule: "host:h:80", by: "plan"),
            .breakpoint(id: 2, rule: "path:/v1", by: "monitor"), .breakpointResolved(how: "continued", by: "monitor"),
            .breakpoint(id: 3, rule: "", by: "library", afterResponse: true),
            .breakpointSet(id: 3, rule: "path:/v1", by: "attached monitor 7", enabled: false, afterResponse: true),
            .breakpointSet(id: 4, rule: "", by: "library", enabled: true, afterResponse: false), .breakpointRemoved(id: 3),
            .finished(outcome: .failure, status: nil, attempts: 3, duration: 4.5, reason: "retries exhausted"),
            .finished(outcome: .success, status: 200, attempts: 1, duration: 0.25, reason: nil),
        ]
        // One sample of every kind, and each kind's case is named as the line names it.
        XCTAssertEqual(Set(payloads.compactMap(\.kind)), Set(EventKind.allCases), "a sample of every kind")
        for (index, payload) in payloads.enumerated() {
            let event = RequestEvent(time: 1.25, operationID: "op \"\(index)\"", attempt: 2, payload: payload)
            let line = EventLog.line(for: event)
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], line)
            XCTAssertEqual(payload.kind?.rawValue, object["event"] as? String, "the kind's name is the one written")
            XCTAssertEqual(object["t"] as? Double, 1.25)
            XCTAssertEqual(object["op"] as? String, "op \"\(index)\"")
            XCTAssertEqual(object["attempt"] as? Int, 2)
            XCTAssertEqual(object["event"] as? String, payload.name)
            XCTAssertEqual(try EventLog.parse(line: line, lineNumber: index), event, line)
            // The fast reader takes every line the writer writes (it declines only what the
            // writer never writes), and reads it as JSONSerialization does.
            guard case .event(let fast) = FlatEventLine.read(Data(line.utf8)) else { return XCTFail("declined: \(line)") }
            XCTAssertEqual(fast, event, line)
            XCTAssertEqual(try EventLog.parseWithFoundation(lineData: Data(line.utf8), lineNumber: index), event, line)
        }
    }

    /// Lines the writer never writes: the fast reader agrees with JSONSerialization or leaves
    /// the line to it; the errors are JSONSerialization's, word for word.
    func testTheFastReaderLeavesWhatItCannotReadExactlyToJSONSerialization() throws {
        let declined = [
            #"{"t":1,"op":"a","attempt":2.0,"event":"started"}"#,                       // 2.0 as an integer: JSONSerialization's call
            #"{"t":1,"op":"a","op":"b","attempt":1,"event":"sent"}"#,                   // a repeated key
            #"{"t":1,"op":"\ud800","attempt":1,"event":"sent"}"#,                       // a lone surrogate
            #"{"t":1,"op":"a","attempt":1,"event":"sent"} x"#,                          // trailing bytes
            #"{"t":1,"op":"a","attempt":1,"event":"data","bytes":12345678901234567890}"#, // a long literal
            #"{"t":1,"op":"a","attempt":1,"event":"other","list":[1]}"#,                // an array
            #"{"t":-1,"op":"a","attempt":1,"event":"sent"}"#,                           // out of range: the error is JSONSerialization's
        ]
        for line in declined {
            guard case .declined = FlatEventLine.read(Data(line.utf8)) else { return XCTFail("read: \(line)") }
        }
        XCTAssertThrowsError(try EventLog.parse(line: declined.last!, lineNumber: 7)) { error in
            XCTAssertEqual("\(error)", #"line 7: field "t": expected seconds from 0 to 1000000000, found -1"#)
        }
        let read = #"{ "t" : 1E0 , "op" : "\u00e9\ud83d\ude00\/" , "attempt" : -0 , "event" : "queued" , "method" : "GET" , "url" : "u" , "headers" : {"A":"b\"c\\d\n","N":5} , "maxAttempts" : 3 }"#
        guard case .event(let event) = FlatEventLine.read(Data(read.utf8)) else { return XCTFail("declined") }
        XCTAssertEqual(event, try EventLog.parseWithFoundation(lineData: Data(read.utf8), lineNumber: 1))
        XCTAssertEqual(event.operationID, "é😀/")
        guard case .queued(_, _, let headers, _, _, _) = event.payload else { return XCTFail("\(event.payload)") }
        XCTAssertEqual(headers, ["A": "b\"c\\d\n"], "non-string header values are left out, as before")
        let edges = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/fuzz/corpus/jsonl-fast/edges.jsonl")
        for line in try String(contentsOf: edges, encoding: .utf8).split(separator: "\n") {
            XCTAssertNil(EventLog.fastReaderDisagreement(Data(line.utf8)), String(line))
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
        let hedged = try object(.hedged(racing: 1, after: 0.2))
        XCTAssertEqual(hedged["racing"] as? Int, 1)
        XCTAssertEqual(hedged["after"] as? Double, 0.2)
        let hedgedQueued = try object(.queued(method: "GET", url: "http://h/", headers: [:], maxAttempts: 3, body: nil,
                                        options: RecordedOptions(hedge: .hedge(after: 0.2, max: 1))))
        XCTAssertEqual(hedgedQueued["hedgeAfter"] as? Double, 0.2)
        XCTAssertEqual(hedgedQueued["hedgeMax"] as? Int, 1)
        let finished = try object(.finished(outcome: .cancelled, status: nil, attempts: 1, duration: 0.5, reason: nil))
        XCTAssertEqual(finished["outcome"] as? String, "cancelled")
        XCTAssert(finished["status"] is NSNull)
        XCTAssertEqual(finished["attempts"] as? Int, 1)
        XCTAssertEqual(try object(.cancelled(by: "cancelAll"))["by"] as? String, "cancelAll")
        XCTAssertEqual(try object(.earlyRetry(trigger: "manual", delay: 0))["trigger"] as? String, "manual")

        // A request's body and options (added; older readers ignore them).
        let settings = RetrySettings(maxAttempts: 4, baseDelay: 0.25, multiplier: 2, maxDelay: 8, jitter: .full,
                                     retryNonIdempotent: false, retryBudget: 60)
        let queued = try object(.queued(method: "POST", url: "http://h/", headers: [:], maxAttempts: 4, body: .bytes(Data("a=1".utf8)),
                                        options: RecordedOptions(attemptTimeout: 2, deadline: 300, retry: settings, earlyRetry: false)))
        XCTAssertEqual(queued["body"] as? String, "a=1")
        XCTAssertEqual(queued["bodyBytes"] as? Int, 3)
        XCTAssertEqual(queued["timeout"] as? Double, 2)
        XCTAssertEqual(queued["deadline"] as? Double, 300)
        XCTAssertEqual(queued["earlyRetry"] as? Bool, false)
        XCTAssertEqual(queued["maxAttempts"] as? Int, 4)
        XCTAssertEqual(queued["retryBaseDelay"] as? Double, 0.25)
        XCTAssertEqual(queued["retryMultiplier"] as? Double, 2)
        XCTAssertEqual(queued["retryMaxDelay"] as? Double, 8)
        XCTAssertEqual(queued["retryJitter"] as? String, "full")
        XCTAssertEqual(queued["retryNonIdempotent"] as? Bool, false)
        XCTAssertEqual(queued["retryBudget"] as? Double, 60)
        let binary = try object(.queued(method: "PUT", url: "http://h/", headers: [:], maxAttempts: nil, body: .bytes(Data([0, 0xFF, 0x10]))))
        XCTAssertEqual(binary["bodyBase64"] as? String, "AP8Q")
        XCTAssertNil(binary["body"])
        let omitted = try object(.queued(method: "PUT", url: "http://h/", headers: [:], maxAttempts: nil, body: .omitted(bytes: 9, reason: "r")))
        XCTAssertEqual(omitted["bodyOmitted"] as? String, "r")
        XCTAssertEqual(omitted["bodyBytes"] as? Int, 9)
        XCTAssertEqual(try object(.built(method: "GET", url: "http://h/7", headers: [:], body: nil))["event"] as? String, "built")
    }

    func testBrokenBodiesAndOptionsNameTheField() {
        func error(_ fields: String) -> String {
            let line = #"{"t":0,"op":"a","attempt":1,"event":"queued","method":"POST","url":"http://h/","# + fields + "}"
            do {
                _ = try EventLog.parse(line: line, lineNumber: 3)
                return "read"
            } catch {
                return "\(error)"
            }
        }
        XCTAssertEqual(error(#""bodyBase64":"!!""#), #"line 3: field "bodyBase64": expected base64, found "!!…""#)
        XCTAssertEqual(error(#""earlyRetry":"no""#), #"line 3: field "earlyRetry": expected true or false, found no"#)
        XCTAssertEqual(error(#""retryBaseDelay":0.5,"retryJitter":"wild","maxAttempts":3,"retryMultiplier":2,"retryMaxDelay":3"#),
                       #"line 3: field "retryJitter": expected none, full, equal, decorrelated, found "wild""#)
        XCTAssertEqual(error(#""retryBaseDelay":0.5,"retryJitter":"full""#), #"line 3: missing field "maxAttempts" (expected an integer)"#)
        XCTAssertEqual(error(#""timeout":1e19"#), #"line 3: field "timeout": expected seconds from 0 to 1000000000, found 1e+19"#)
        XCTAssertEqual(error(#""body":5"#), #"line 3: field "body": expected a string"#)
        XCTAssertEqual(error(#""bodyOmitted":"a stream","bodyBytes":-5"#), #"line 3: field "bodyBytes": expected a size of 0 or more, found -5"#)
    }

    /// Found as a hostile reader: a breaker's `until` of 1e300 was read as absent, so the
    /// Hosts view showed an open breaker as "isolated". Present, it is checked like any time.
    func testABreakersUntilIsCheckedWhenPresent() throws {
        let line = #"{"t":0.1,"op":"","attempt":0,"event":"circuitOpened","host":"h:80","reason":"x","until":1e300}"#
        XCTAssertThrowsError(try EventLog.parse(line: line, lineNumber: 2)) { error in
            XCTAssertEqual("\(error)", #"line 2: field "until": expected seconds from 0 to 1000000000, found 1e+300"#)
        }
        let isolated = try EventLog.parse(line: #"{"t":0.1,"op":"","attempt":0,"event":"circuitOpened","host":"h:80","reason":"isolated by monitor"}"#,
                                          lineNumber: 2)
        XCTAssertEqual(isolated?.payload, .circuitOpened(host: "h:80", reason: "isolated by monitor", until: nil))
    }

    func testStringsAreEscaped() {
        XCTAssertEqual(JSONText.quote("a\"b\\c\nd\u{1}é"), #""a\"b\\c\nd\u0001é""#)
    }

    /// The JSON writer writes a head's lines as it goes; what it writes must be the joined
    /// string quoted, escapes and all (a quote, a backslash, a tab, a C1 control, non-ASCII).
    func testHeaderFieldLinesAreTheJoinedStringQuoted() throws {
        let fields = FieldMerge.fields([("X-Quote", "say \"hi\""), ("X-Back", "a\\b"), ("X-Tab", "a\tb"), ("X-C1", "a\u{85}b"),
                                        ("X-Name", "Zoë 12345678901234567890"), ("x-Empty", ""), ("X-Dup", "1"), ("X-Dup", "2")])
        XCTAssertEqual(fields.count, 8)
        let cases: [(RequestEvent.Payload, HTTPFields)] = [(.headerFields(side: .request, fields: fields), fields),
                                                           (.trailers(side: .response, fields: fields), fields),
                                                           (.headerFields(side: .response, fields: HTTPFields()), HTTPFields())]
        for (payload, written) in cases {
            let line = EventLog.line(for: RequestEvent(time: 1, operationID: "op-1", attempt: 1, payload: payload))
            XCTAssertTrue(line.hasSuffix(",\"fields\":" + JSONText.quote(RequestEvent.Payload.lines(of: written)) + "}"), line)
            XCTAssertEqual(try EventLog.parse(line: line, lineNumber: 1)?.payload, payload)
        }
        XCTAssertTrue(EventLog.line(for: RequestEvent(time: 1, operationID: "op-1", attempt: 1, payload: .headerFields(side: .request, fields: fields)))
            .contains(#""fields":"X-Quote: say \"hi\"\nX-Back: a\\b\nX-Tab: a\tb\nX-C1: a\u0085b\nX-Name: Zoë"#))
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

    /// A lost hedge is carried by the error (`hedge: true`); recordings from before the field
    /// are read by the message's words, once, in the reader.
    func testAHedgeCancellationIsAFieldAndOldRecordingsStillRead() throws {
        let line = EventLog.line(for: RequestEvent(time: 1, operationID: "h", attempt: 1, payload: .taskCompleted(error: .hedgeLost(to: 2))))
        XCTAssertTrue(line.contains(#""hedge":true"#), line)
        guard case .taskCompleted(let error?)? = try EventLog.parse(line: line, lineNumber: 1)?.payload else { return XCTFail(line) }
        XCTAssertTrue(error.isHedgeCancellation)
        let old = #"{"t":1,"op":"h","attempt":1,"event":"taskCompleted","error":{"code":-999,"message":"cancelled by hedge: attempt 2 answered first"}}"#
        guard case .taskCompleted(let legacy?)? = try EventLog.parse(line: old, lineNumber: 1)?.payload else { return XCTFail(old) }
        XCTAssertTrue(legacy.isHedgeCancellation)
        let plain = #"{"t":1,"op":"h","attempt":1,"event":"taskCompleted","error":{"code":-999,"message":"cancelled"}}"#
        guard case .taskCompleted(let cancelled?)? = try EventLog.parse(line: plain, lineNumber: 1)?.payload else { return XCTFail(plain) }
        XCTAssertFalse(cancelled.isHedgeCancellation)
    }
}

/// `program` (added): written only when set, read back by both readers the same way.
final class EventProgramFieldTests: XCTestCase {
    func testTheProgramOfAMergedViewIsWrittenAndReadBack() throws {
        let merged = RequestEvent(time: 1.5, operationID: "4121/login", attempt: 1, payload: .started, program: "api 4121")
        let line = EventLog.line(for: merged)
        XCTAssertEqual(line, #"{"t":1.5,"op":"4121/login","attempt":1,"event":"started","program":"api 4121"}"#)
        XCTAssertEqual(try EventLog.parse(line: line, lineNumber: 1), merged)
        XCTAssertNil(EventLog.fastReaderDisagreement(Data(line.utf8)))
        let own = RequestEvent(time: 1.5, operationID: "login", attempt: 1, payload: .started)
        XCTAssertFalse(EventLog.line(for: own).contains("program"), "a program's own stream does not name itself")
        XCTAssertNil(try EventLog.parse(line: EventLog.line(for: own), lineNumber: 1)?.program)
        // A `program` that is not a string is no program (both readers agree).
        let odd = #"{"t":1,"op":"x","attempt":1,"event":"started","program":7}"#
        XCTAssertNil(try EventLog.parse(line: odd, lineNumber: 1)?.program)
        XCTAssertNil(EventLog.fastReaderDisagreement(Data(odd.utf8)))
    }
}
