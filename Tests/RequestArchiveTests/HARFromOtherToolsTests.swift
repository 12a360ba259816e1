import Foundation
@testable import RequestArchive
import RequestEventFormat
import RequestOperations
import XCTest

/// HAR files written by other tools (#42): a header's value given as an array of strings is
/// read as the header repeated; their secrets are redacted as a live session's are; and an
/// export gives back what the events cannot hold (header order, cookies, the file's sizes
/// and media types, repeated query names), checked with Python's json.
final class HARFromOtherToolsTests: XCTestCase {
    private func fixture(_ name: String) throws -> String {
        try XCTUnwrap(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil)?.path, name)
    }

    func testArrayValuesAreRepeatedHeadersAndSecretsAreRedactedAsLiveOnes() throws {
        let result = try HARImport.read(path: try fixture("multivalued.har"))
        XCTAssertEqual(result.entryCount, 2, "no entry refused for its array values")
        XCTAssertEqual(result.multiValuedHeaders, 2)
        var responses: [String: [String: String]] = [:], requests: [String: [String: String]] = [:]
        for event in result.events {
            if case .response(_, let headers, _, _) = event.payload { responses[event.operationID] = headers }
            if case .queued(_, _, let headers, _, _, _) = event.payload { requests[event.operationID] = headers }
        }
        XCTAssertEqual(responses["entry-1"]?["Vary"], "Accept-Encoding, Origin", "joined as a live response's repeated field")
        XCTAssertEqual(requests["entry-2"]?["Accept"], "application/json, text/plain")
        XCTAssertEqual(responses["entry-1"]?["Set-Cookie"], Redactor.placeholder, "one rule for imported and live Set-Cookie")
        XCTAssertEqual(requests["entry-1"]?["Cookie"], Redactor.placeholder)
        let text = result.events.map { EventLog.line(for: $0) }.joined(separator: "\n")
        XCTAssertFalse(text.contains("s3cr3tvalue") || text.contains("abc123secret"), "no secret of the file in any event")

        let kept = try HARImport.read(path: try fixture("multivalued.har"), redact: false)
        XCTAssert(kept.events.contains { if case .response(_, let headers, _, _) = $0.payload { headers["Set-Cookie"]?.contains("s3cr3tvalue") == true } else { false } },
                  "redact: false keeps them as the file has them")
    }

    /// A field reqtop does not need to replay an entry never makes it skip the entry: cookies
    /// as an object, a media type as an array, a size as a string, a null among the timings,
    /// an `_error` that is a number. Read when it has HAR's shape, kept as given for export
    /// otherwise (cookie values redacted), and named once per field.
    func testFieldsInAnotherShapeAreReadAroundNeverASkip() throws {
        let result = try HARImport.read(path: try fixture("other-shapes.har"))
        XCTAssertEqual(result.entryCount, 3)
        XCTAssertEqual(result.skipped, [])
        XCTAssertEqual(Set(result.events.map(\.operationID)), ["entry-1", "entry-2", "entry-3"])
        let said = Dictionary(uniqueKeysWithValues: result.otherShapes.map { ($0.path, "\($0.found) ×\($0.entries)") })
        XCTAssertEqual(said, ["request.cookies": "an object ×1", "request.postData.mimeType": "an array ×1", "response.content.size": "a string ×1",
                              "response.content.mimeType": "an object ×1", "response.content.encoding": "a number ×1", "response.cookies": "an object ×1",
                              "time": "a string ×1", "_error": "a number ×1"])
        // What replay needs is read: the POST's body, the answers' statuses and bodies.
        let posted = result.events.contains { if case .queued("POST", _, _, _, .bytes(let body)?, _) = $0.payload { body == Data(#"{"a":1}"#.utf8) } else { false } }
        XCTAssertTrue(posted)
        let statuses = result.events.compactMap { if case .finished(_, let status, _, _, _) = $0.payload { status } else { nil } }
        XCTAssertEqual(statuses.sorted(), [200, 201, 404])

        // Exported again, each entry's cookies are as the file gave them, their values redacted
        // (read with Python's json).
        let folder = NSTemporaryDirectory() + "reqtop-har-shapes-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let out = folder + "/again.har"
        try HARExport.data(events: result.events, startedAt: try XCTUnwrap(result.startedAt), shapes: result.shapes).write(to: URL(fileURLWithPath: out))
        let text = try String(contentsOfFile: out, encoding: .utf8)
        XCTAssertFalse(text.contains("c00kievalue") || text.contains("t0psecret"), "no cookie value leaves unredacted")
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = ["-c", """
            import json, sys
            entries = json.load(open(sys.argv[1]))["log"]["entries"]
            print(json.dumps(entries[0]["request"]["cookies"], sort_keys=True))
            print(json.dumps(entries[2]["response"]["cookies"], sort_keys=True))
            """, out]
        let pipe = Pipe()
        python.standardOutput = pipe
        try python.run()
        let printed = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        python.waitUntilExit()
        XCTAssertEqual(printed, #"{"sid": "[redacted]", "theme": "[redacted]"}"# + "\n" + #"{"name": "gone", "value": "[redacted]"}"# + "\n")
    }

    func testAValueOfAnotherTypeIsStillNamedByItsPath() throws {
        let har = #"{"log": {"entries": [{"startedDateTime": "2023-03-30T04:39:18.981Z", "request": {"method": "GET", "url": "http://a/", "headers": [{"name": "X", "value": 5}]}, "response": {"status": 200}}]}}"#
        XCTAssertThrowsError(try HARImport.parse(Data(har.utf8), file: "t.har", strict: true)) { error in
            XCTAssert("\(error)".contains("$.log.entries[0].request.headers[0].value"), "\(error)")
        }
    }

    func testAnExportKeepsWhatTheFileSaid() throws {
        let result = try HARImport.read(path: try fixture("multivalued.har"))
        let data = try HARExport.data(events: result.events, startedAt: result.startedAt ?? Date(), shapes: result.shapes)
        let file = NSTemporaryDirectory() + "export-\(UUID().uuidString.prefix(8)).har"
        try data.write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", """
            import json, sys
            entries = json.load(open(sys.argv[1]))['log']['entries']
            one, two = entries
            assert [h['name'] for h in one['request']['headers']] == ['User-Agent', 'Accept', 'Cookie'], one['request']['headers']
            assert [h['name'] for h in one['response']['headers']][:4] == ['Content-Type', 'Content-Length', 'Set-Cookie', 'Connection'], one['response']['headers']
            assert one['request']['queryString'] == [{'name': 'id', 'value': '3'}, {'name': 'id', 'value': '9'}], one['request']['queryString']
            assert one['response']['cookies'] == [{'name': 'sid', 'value': '[redacted]', 'path': '/', 'httpOnly': True}], one['response']['cookies']
            assert one['request']['cookies'] == [{'name': 'session', 'value': '[redacted]'}], one['request']['cookies']
            assert two['response']['content']['size'] == 2, two['response']['content']
            assert two['response']['content']['mimeType'] == 'application/json', two['response']['content']
            text = open(sys.argv[1]).read()
            assert 's3cr3tvalue' not in text and 'abc123secret' not in text
            """, file]
        try python.run()
        python.waitUntilExit()
        XCTAssertEqual(python.terminationStatus, 0, "Python's json and the checks above")
    }
}
