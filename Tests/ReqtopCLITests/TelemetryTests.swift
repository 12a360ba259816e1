import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import ReqtopApplication
@testable import ReqtopCLI
import RequestOperations
import XCTest

/// `--otlp` end to end: what swift-otel sends, decoded by the OpenTelemetry project's schema
/// in a receiver of its own (see ``OTLPReceiver``).
final class TelemetryTests: XCTestCase {
    private func receiver() throws -> OTLPReceiver {
        let receiver = try OTLPReceiver()
        addTeardownBlock { receiver.stop() }
        return receiver
    }

    private func attributes(_ span: [String: Any]) -> [String: Any] { span["attributes"] as? [String: Any] ?? [:] }

    /// The quick demo: one CLIENT span per attempt, under one `request` span per operation,
    /// resend counts on retries, the backoff as a span event, and the metrics.
    func testTheDemosAttemptsArriveAsSpansWithTheConventionsAttributes() throws {
        let collector = try receiver()
        let run = try reqtop(["demo", "--scenario", "quick", "--no-tui", "--otlp", collector.url])
        XCTAssertEqual(run.status, 1, "the demo fails some requests on purpose: \(run.stderr)")
        XCTAssertFalse(run.stderr.contains("telemetry"), run.stderr)
        var attempts: [String: Set<Int>] = [:]
        for event in run.events where ["started", "hedged"].contains(event["event"] as? String ?? "") {
            attempts[event["op"] as? String ?? "", default: []].insert(event["attempt"] as? Int ?? 0)
        }
        let spans = collector.spans
        let clients = spans.filter { $0["kind"] as? Int == 3 }
        let roots = spans.filter { $0["kind"] as? Int == 1 && $0["name"] as? String == "request" }
        XCTAssertEqual(clients.count, attempts.values.reduce(0) { $0 + $1.count }, "one span per attempt")
        for (op, numbers) in attempts {
            let own = clients.filter { attributes($0)["reqtop.operation"] as? String == op }
            XCTAssertEqual(Set(own.compactMap { attributes($0)["reqtop.attempt"] as? Int }), numbers, op)
            let root = try XCTUnwrap(roots.first { attributes($0)["reqtop.operation"] as? String == op }, op)
            XCTAssertEqual(Set(own.map { $0["traceId"] as? String ?? "" }), [root["traceId"] as? String ?? "?"], "\(op): one trace")
            XCTAssertEqual(Set(own.map { $0["parentSpanId"] as? String ?? "" }), [root["spanId"] as? String ?? "?"], "\(op): siblings")
            for span in own {
                let number = attributes(span)["reqtop.attempt"] as? Int ?? 0
                XCTAssertEqual(attributes(span)["http.request.resend_count"] as? Int, number > 1 ? number - 1 : nil, op)
                XCTAssertEqual(span["name"] as? String, attributes(span)["http.request.method"] as? String)
                XCTAssertEqual(attributes(span)["server.address"] as? String, "127.0.0.1")
                XCTAssertNotNil(attributes(span)["url.full"])
            }
        }
        let flaky = clients.filter { attributes($0)["reqtop.operation"] as? String == "w1-flaky" }
            .sorted { (attributes($0)["reqtop.attempt"] as? Int ?? 0) < (attributes($1)["reqtop.attempt"] as? Int ?? 0) }
        XCTAssertGreaterThan(flaky.count, 1)
        XCTAssertEqual(attributes(flaky[0])["http.response.status_code"] as? Int, 503)
        XCTAssertEqual(attributes(flaky[0])["error.type"] as? String, "503")
        XCTAssertEqual(flaky[0]["status"] as? Int, 2, "STATUS_CODE_ERROR")
        let backoff = (flaky[0]["events"] as? [[String: Any]] ?? []).first { $0["name"] as? String == "retry scheduled" }
        XCTAssertNotNil((backoff?["attributes"] as? [String: Any])?["reqtop.retry.delay"], "the backoff is a span event")
        let names = Set(collector.metrics.compactMap { $0["name"] as? String })
        XCTAssert(names.isSuperset(of: ["http.client.request.duration", "http.client.active_requests", "reqtop.operations", "reqtop.retries"]), "\(names)")
    }

    /// The upstream sees the span's context: the echo route shows the `traceparent` the
    /// request carried, and its trace and parent ids are those of the span the receiver got.
    func testTheTraceparentTheServerSawIsTheSpansOwn() throws {
        let collector = try receiver()
        let server = try FaultServer.start(port: 0)
        defer { server.stop() }
        let telemetry = try Telemetry(endpoint: collector.url, explicit: true)
        let queue = RequestQueue(instruments: telemetry.instruments)
        let op = queue.add(URLRequest(url: server.url("/echo")), id: "echo")
        queue.waitUntilAllOperationsAreFinished()
        queue.events.waitUntilDelivered()
        telemetry.finish()
        let echo = try XCTUnwrap(JSONSerialization.jsonObject(with: op.result?.data ?? Data()) as? [String: Any])
        let headers = (echo["headers"] as? [String: String] ?? [:]).reduce(into: [String: String]()) { $0[$1.key.lowercased()] = $1.value }
        let parts = try XCTUnwrap(headers["traceparent"], "\(headers)").split(separator: "-").map(String.init)
        XCTAssertEqual(parts.count, 4, "version-traceid-parentid-flags")
        let span = try XCTUnwrap(collector.spans.first { $0["kind"] as? Int == 3 })
        XCTAssertEqual(parts[1], span["traceId"] as? String)
        XCTAssertEqual(parts[2], span["spanId"] as? String, "the upstream's parent is the attempt's span")
    }

    /// A recording sent as a trace has the operations and attempts `replay --no-tui` shows,
    /// at the recording's own times.
    func testARecordingExportedAsATraceHasTheOperationsAndAttemptsOfItsReplay() throws {
        let collector = try receiver()
        let recording = FileManager.default.temporaryDirectory.appendingPathComponent("trace-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: recording) }
        _ = try reqtop(["demo", "--scenario", "quick", "--no-tui", "--record", recording])
        let export = try reqtop(["export", recording, "--otlp", collector.url])
        XCTAssertEqual(export.status, 0, export.stderr)
        let replay = try reqtop(["replay", recording, "--no-tui"])
        var attempts = Set<String>()
        for event in replay.events where ["started", "hedged"].contains(event["event"] as? String ?? "") {
            attempts.insert("\(event["op"] as? String ?? "")#\(event["attempt"] as? Int ?? 0)")
        }
        let deadline = Date().addingTimeInterval(10)
        while collector.spans.count < attempts.count, Date() < deadline { usleep(50_000) }
        let clients = collector.spans.filter { $0["kind"] as? Int == 3 }
        XCTAssertEqual(Set(clients.map { "\(attributes($0)["reqtop.operation"] as? String ?? "")#\(attributes($0)["reqtop.attempt"] as? Int ?? 0)" }),
                       attempts)
        let roots = collector.spans.filter { $0["kind"] as? Int == 1 }
        XCTAssertEqual(Set(roots.compactMap { attributes($0)["reqtop.operation"] as? String }), Set(attempts.map { String($0.split(separator: "#")[0]) }))
        XCTAssert(export.stderr.contains("sent \(clients.count + roots.count) spans"), export.stderr)
        // At the recording's times: every span within the session, none in the future.
        let now = UInt64(Date().timeIntervalSince1970 * 1e9)
        XCTAssert(collector.spans.allSatisfy { ($0["start"] as? UInt64 ?? 0) <= ($0["end"] as? UInt64 ?? 0) && ($0["end"] as? UInt64 ?? 0) < now })

        let neither = try reqtop(["export", recording])
        XCTAssertEqual(neither.status, 2)
        XCTAssert(neither.stderr.contains("say what to export to"), neither.stderr)
    }

    /// SIGTERM in the middle of the demo: what ran is flushed before the process ends.
    func testSIGTERMFlushesWhatRan() throws {
        let collector = try receiver()
        let process = Process()
        process.executableURL = CommandLineTests.binary
        process.arguments = ["demo", "--no-tui", "--otlp", collector.url]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        nonisolated(unsafe) var stdout = Data()
        let reading = DispatchGroup()
        DispatchQueue.global().async(group: reading) { stdout = out.fileHandleForReading.readDataToEndOfFile() }
        Thread.sleep(forTimeInterval: 3)
        process.terminate()
        process.waitUntilExit()
        reading.wait()
        let events = String(decoding: stdout, as: UTF8.self).split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let attempts = events.filter { $0["event"] as? String == "taskCreated" }.count
        let operations = Set(events.compactMap { $0["op"] as? String }.filter { !$0.isEmpty }).count
        XCTAssertGreaterThan(attempts, 5)
        XCTAssertEqual(collector.spans.filter { $0["kind"] as? Int == 3 }.count, attempts, "every attempt's span was sent before the end")
        XCTAssertEqual(collector.spans.filter { $0["kind"] as? Int == 1 }.count, operations)
    }

    /// A collector that is not there: said once on stderr; the requests run as without it.
    func testAnUnreachableCollectorIsSaidOnceAndChangesNothing() throws {
        let started = Date()
        let run = try reqtop(["demo", "--scenario", "quick", "--no-tui", "--otlp", "http://127.0.0.1:9"])
        XCTAssertEqual(run.status, 1, run.stderr)
        let lines = run.stderr.split(separator: "\n").filter { $0.contains("telemetry") }
        XCTAssertEqual(lines.count, 1, run.stderr)
        XCTAssert(lines.first?.contains("http://127.0.0.1:9") == true, run.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 30)
        XCTAssertEqual(run.events.filter { $0["event"] as? String == "finished" }.count, 6, "every operation ran")

        let bad = try reqtop(["demo", "--otlp", "collector:4318"])
        XCTAssertEqual(bad.status, 2)
        XCTAssert(bad.stderr.contains("--otlp: \"collector:4318\" is not a collector's URL"), bad.stderr)
    }
}
