import FaultServer
import Foundation
import XCTest

/// A request taken out of reqtop as curl: the real `curl`, run by a real shell on the line
/// `export --curl` prints, sends what the program sent (the fault server's echo shows it).
final class CurlExportTests: XCTestCase {
    private func shell(_ line: String) throws -> (status: Int32, stdout: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", line]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func testTheCurlLineSendsWhatTheProgramSent() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail("curl is missing: .ci/run installs it") }
            throw XCTSkip("curl is not installed (.ci/run installs it)")
        }
        let server = try FaultServer.start()
        defer { server.stop() }
        let folder = NSTemporaryDirectory() + "curl-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plan = folder + "/plan.json", recording = folder + "/run.jsonl"
        try """
        {"retry": {"maxAttempts": 1}, "requests": [
          {"id": "order", "method": "PUT", "url": "\(server.url("/echo").absoluteString)?q=a%20b&x=$(id)",
           "headers": {"X-Trace": "it's `here`", "Content-Type": "application/json", "Authorization": "Bearer s3cr3t-t0k3n"},
           "body": {"item": 7, "note": "don't $(break) \\"me\\""}}
        ]}
        """.write(toFile: plan, atomically: true, encoding: .utf8)
        let run = try reqtop(["run", plan, "--no-tui", "--record", recording])
        XCTAssertEqual(run.status, 0, run.stderr)
        let sent = try XCTUnwrap(server.counters.requests("/echo").first)

        let export = try reqtop(["export", recording, "--curl", "order"])
        XCTAssertEqual(export.status, 0, export.stderr)
        XCTAssertTrue(export.stdout.hasPrefix("# [redacted] stands for values reqtop did not record"), export.stdout)
        XCTAssertFalse(export.stdout.contains("s3cr3t"), "redacted in the recording, redacted in the line")
        let (status, answer) = try shell(export.stdout.replacingOccurrences(of: "curl ", with: "curl -sS "))
        XCTAssertEqual(status, 0, export.stdout)
        let echoed = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any], answer)
        XCTAssertEqual(echoed["method"] as? String, "PUT")
        XCTAssertEqual((echoed["query"] as? [String: String]), ["q": "a b", "x": "$(id)"])
        let headers = try XCTUnwrap(echoed["headers"] as? [String: String])
        XCTAssertEqual(headers["x-trace"], "it's `here`")
        XCTAssertEqual(headers["authorization"], "[redacted]", "the stand-in, never the secret")
        XCTAssertEqual(echoed["body"] as? String, String(decoding: sent.body, as: UTF8.self), "the same body, byte for byte")

        // The same request as a plan entry: `reqtop run` takes it, and sends the same.
        let entry = try reqtop(["export", recording, "--plan", "order"])
        XCTAssertEqual(entry.status, 0, entry.stderr)
        let replan = folder + "/again.json"
        try #"{"retry": {"maxAttempts": 1}, "requests": [\#(entry.stdout)]}"#.write(toFile: replan, atomically: true, encoding: .utf8)
        let again = try reqtop(["run", replan, "--no-tui"])
        XCTAssertEqual(again.status, 0, again.stderr + entry.stdout)
        let resent = try XCTUnwrap(server.counters.requests("/echo").last)
        XCTAssertEqual(resent.method, "PUT")
        XCTAssertEqual(resent.headers["x-trace"], "it's `here`")
        XCTAssertEqual(try JSONSerialization.jsonObject(with: resent.body) as? NSDictionary,
                       try JSONSerialization.jsonObject(with: sent.body) as? NSDictionary)

        let missing = try reqtop(["export", recording, "--curl", "nope"])
        XCTAssertEqual(missing.status, 2)
        XCTAssertTrue(missing.stderr.contains("no operation \"nope\" (there are 1: order)"), missing.stderr)
    }
}
