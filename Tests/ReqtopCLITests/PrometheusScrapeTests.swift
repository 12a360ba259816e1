import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest

/// `--metrics` scraped by a real Prometheus (Debian's `prometheus`, which `.ci/run`
/// installs): its query API returns the demo's retries. Skipped, saying why, where the
/// package is not installed.
final class PrometheusScrapeTests: XCTestCase {
    private static let prometheus = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"].first { FileManager.default.isExecutableFile(atPath: $0) }

    func testAPrometheusScrapingTheDemoSeesItsRetries() throws {
        guard let binary = Self.prometheus else {
            throw XCTSkip("Debian's prometheus package is not installed here (.ci/run installs it: apt-get install prometheus)")
        }
        // The demo first, on a free port it prints.
        let demo = Process()
        demo.executableURL = CommandLineTests.binary
        demo.arguments = ["demo", "--no-tui", "--metrics", "127.0.0.1:0"]
        let err = Pipe()
        demo.standardOutput = FileHandle.nullDevice
        demo.standardError = err
        try demo.run()
        defer { if demo.isRunning { demo.terminate(); demo.waitUntilExit() } }
        let line = String(decoding: err.fileHandleForReading.availableData, as: UTF8.self)
        let target = try XCTUnwrap(line.range(of: #"127\.0\.0\.1:[0-9]+"#, options: .regularExpression).map { String(line[$0]) }, line)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("prometheus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("prometheus.yml")
        try """
        global:
          scrape_interval: 1s
        scrape_configs:
          - job_name: reqtop
            static_configs:
              - targets: ["\(target)"]
        """.write(to: config, atomically: true, encoding: .utf8)
        // Prometheus takes a fixed port: a random one, another if it was taken.
        var port = 0
        var server = Process()
        for _ in 0..<5 {
            port = Int.random(in: 20_000...60_000)
            server = Process()
            server.executableURL = URL(fileURLWithPath: binary)
            server.arguments = ["--config.file=\(config.path)", "--storage.tsdb.path=\(directory.appendingPathComponent("data").path)",
                                "--web.listen-address=127.0.0.1:\(port)"]
            server.standardOutput = FileHandle.nullDevice
            server.standardError = FileHandle.nullDevice
            try server.run()
            Thread.sleep(forTimeInterval: 0.5)
            if server.isRunning { break }
        }
        XCTAssertTrue(server.isRunning, "prometheus did not start on a free port")
        defer { server.terminate(); server.waitUntilExit() }

        // Ask until the retries show (the demo retries within its first seconds), 20 s at most.
        var value: Double?
        let deadline = Date().addingTimeInterval(20)
        while value == nil, Date() < deadline {
            Thread.sleep(forTimeInterval: 1)
            value = try? query("sum(reqtop_retries)", port: port).flatMap { $0 > 0 ? $0 : nil }
        }
        XCTAssertNotNil(value, "Prometheus never saw a retry from \(target)")
        let up = try query("up{job=\"reqtop\"}", port: port)
        XCTAssertEqual(up, 1, "the scrape target is up")
        XCTAssertNotNil(try query("sum(http_client_request_duration_seconds_count)", port: port))
    }

    func testABadAddressIsNamed() throws {
        let run = try reqtop(["demo", "--no-tui", "--metrics", "localhost"])
        XCTAssertEqual(run.status, 2)
        XCTAssert(run.stderr.contains(#"--metrics: "localhost" is not HOST:PORT"#), run.stderr)
    }

    /// The first value of an instant query, nil when the result is empty.
    private func query(_ expression: String, port: Int) throws -> Double? {
        var components = URLComponents(string: "http://127.0.0.1:\(port)/api/v1/query")!
        components.queryItems = [URLQueryItem(name: "query", value: expression)]
        let data = try Data(contentsOf: components.url!)
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        let result = (object?["data"] as? [String: Any])?["result"] as? [[String: Any]]
        guard let pair = result?.first?["value"] as? [Any], let text = pair.last as? String else { return nil }
        return Double(text)
    }
}
