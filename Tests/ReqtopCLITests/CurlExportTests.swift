import FaultServer
import Foundation
import RequestEventFormat
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

    /// Skips where curl is missing, but fails in CI, which installs it.
    private func requireCurl() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail("curl is missing: .ci/run installs it") }
            throw XCTSkip("curl is not installed (.ci/run installs it)")
        }
    }

    func testTheCurlLineSendsWhatTheProgramSent() throws {
        try requireCurl()
        let server = try FaultServer.start()
        defer { server.stop() }
        let folder = try makeTemporaryFolder("curl")
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

    /// Each request as the server saw it from the program, then from the shell running the
    /// line `export --curl` printed: the same method, body bytes and headers. Before: a body
    /// with a NUL was cut, an empty header was dropped (`-H 'X-Empty:'` removes it), a body
    /// with no type got curl's form type, a `bodyFile` body vanished with no comment, and a
    /// header's ESC and BEL went raw to the terminal.
    func testEveryRequestIsReproducedByteForByte() throws {
        try requireCurl()
        let server = try FaultServer.start()
        defer { server.stop() }
        let folder = try makeTemporaryFolder("curl")
        let upload = Data((0..<300).map { UInt8($0 % 256) })
        try upload.write(to: URL(fileURLWithPath: folder + "/upload.bin"))
        let plan = folder + "/plan.json", recording = folder + "/run.jsonl"
        let base = server.baseURL.absoluteString
        try """
        {"retry": {"maxAttempts": 1}, "requests": [
          {"id": "nul", "method": "POST", "url": "\(base)/echo/nul", "headers": {"Content-Type": "text/plain"}, "body": "a\\u0000b\\u0001c%d\\\\n"},
          {"id": "empty", "url": "\(base)/echo/empty", "headers": {"X-Empty": ""}},
          {"id": "untyped", "method": "POST", "url": "\(base)/echo/untyped", "body": "k=v&x"},
          {"id": "upload", "method": "PUT", "url": "\(base)/echo/upload", "bodyFile": "upload.bin", "headers": {"Content-Type": "application/octet-stream"}},
          {"id": "vhost", "url": "\(base)/echo/vhost", "headers": {"Host": "shop.example"}}
        ]}
        """.write(toFile: plan, atomically: true, encoding: .utf8)
        let run = try reqtop(["run", plan, "--no-tui", "--no-redact", "--record", recording])
        XCTAssertEqual(run.status, 0, run.stderr)
        let ignored: Set<String> = ["user-agent", "accept", "host", "connection", "accept-encoding", "content-length", "accept-language", "expect"]
        for id in ["nul", "empty", "untyped", "upload", "vhost"] {
            let original = try XCTUnwrap(server.counters.requests("/echo/\(id)").last, id)
            let export = try reqtop(["export", recording, "--curl", id])
            XCTAssertEqual(export.status, 0, export.stderr)
            XCTAssertFalse(export.stdout.unicodeScalars.contains { TerminalText.isControl($0) && $0 != "\n" }, "\(id): a raw control character in \(export.stdout)")
            let (status, _) = try shell("cd '\(folder)' && " + export.stdout.replacingOccurrences(of: "curl ", with: "curl -sS -o /dev/null "))
            XCTAssertEqual(status, 0, export.stdout)
            let again = try XCTUnwrap(server.counters.requests("/echo/\(id)").last, id)
            XCTAssertEqual(server.counters.requests("/echo/\(id)").count, 2, "\(id): \(export.stdout)")
            XCTAssertEqual(again.method, original.method, id)
            XCTAssertEqual(Array(again.body), Array(original.body), "\(id): the body byte for byte: \(export.stdout)")
            XCTAssertEqual(again.headers.filter { !ignored.contains($0.key) }, original.headers.filter { !ignored.contains($0.key) },
                           "\(id): \(export.stdout)")
        }
        XCTAssertEqual(Array(server.counters.requests("/echo/upload").last?.body ?? Data()), Array(upload))
        XCTAssertEqual(server.counters.requests("/echo/empty").last?.headers["x-empty"], "")
        XCTAssertNil(server.counters.requests("/echo/untyped").last?.headers["content-type"])
        // A `Host` naming another host than the URL's (a virtual host on an address) is the
        // request's own: the line carries it; one naming the URL is left to curl.
        XCTAssertEqual(server.counters.requests("/echo/vhost").map { $0.headers["host"] }, ["shop.example", "shop.example"])
        XCTAssertFalse(try reqtop(["export", recording, "--curl", "nul"]).stdout.lowercased().contains("host:"))
        XCTAssert(try reqtop(["export", recording, "--curl", "upload"]).stdout.contains("# the body was read from"))

        // A header a transport would not send but a recording (or a HAR) can hold: the line
        // carries its ESC and BEL written out, and the shell still sends them.
        let hostile = folder + "/hostile.jsonl"
        try """
        {"event":"session","version":1,"startedAt":"2026-11-25T10:00:00.000Z","redacted":false}
        {"t":0.1,"op":"escape","attempt":1,"event":"queued","method":"GET","url":"\(base)/echo/escape","headers":{"X-Trace":"a\\u001b]0;TITLE\\u0007b\\u007fc"}}

        """.write(toFile: hostile, atomically: true, encoding: .utf8)
        let export = try reqtop(["export", hostile, "--curl", "escape"])
        XCTAssertEqual(export.status, 0, export.stderr)
        XCTAssertFalse(export.stdout.unicodeScalars.contains { TerminalText.isControl($0) && $0 != "\n" }, export.stdout)
        // The server refuses such a header (as it should), so the shell's words are read
        // instead of curl's request: a stand-in `curl` prints each argument's bytes in hex.
        let words = try shell("curl() { for word; do printf '%s' \"$word\" | od -An -tx1 | tr -d ' \\n'; echo; done; }; " + export.stdout)
        XCTAssertEqual(words.status, 0, export.stdout)
        let header = Data("X-Trace: a\u{1B}]0;TITLE\u{07}b\u{7F}c".utf8).map { String(format: "%02x", $0) }.joined()
        XCTAssert(words.stdout.split(separator: "\n").contains(Substring(header)), "the shell passes the recorded bytes: \(words.stdout)")
    }
}
