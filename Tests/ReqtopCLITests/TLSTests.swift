import FaultServer
import Foundation
import XCTest

/// HTTPS with one's own certificate authority, on the fault server speaking TLS with
/// certificates made here (no key is committed). Before, both transports failed with -1202
/// and nothing (flag, plan, environment) changed it; `--insecure` did not exist.
final class TLSTests: XCTestCase {
    private func plan(_ url: URL) throws -> String {
        let path = NSTemporaryDirectory() + "tls-plan-\(UUID().uuidString.prefix(8)).json"
        try #"{"retry": {"maxAttempts": 1}, "requests": [{"id": "tls", "url": "\#(url.absoluteString)"}]}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func errorCode(_ run: ReqtopRun) -> Int? {
        run.events.first { $0["event"] as? String == "taskCompleted" }.flatMap { ($0["error"] as? [String: Any])?["code"] as? Int }
    }

    func testAServerFromOurOwnAuthorityIsReachedWithCacertOnNIO() throws {
        let pki = try TestCertificates.make()
        defer { pki.remove() }
        let server = try FaultServer.start(tls: pki)
        defer { server.stop() }
        let plan = try plan(server.url("/status/200"))

        let untrusted = try reqtop(["run", plan, "--transport", "nio", "--no-tui"])
        XCTAssertEqual(untrusted.status, 1, untrusted.stderr)
        XCTAssertEqual(errorCode(untrusted), -1202, "not trusted without the authority: \(untrusted.stdout)")

        let trusted = try reqtop(["run", plan, "--transport", "nio", "--no-tui", "--cacert", pki.caFile])
        XCTAssertEqual(trusted.status, 0, trusted.stderr + trusted.stdout)
        XCTAssertTrue(trusted.stderr.contains("1 succeeded"), trusted.stderr)

        let insecure = try reqtop(["run", plan, "--transport", "nio", "--no-tui", "--insecure"])
        XCTAssertEqual(insecure.status, 0, insecure.stderr)
        XCTAssertTrue(insecure.stderr.contains("WARNING: --insecure: TLS certificates are not verified"), insecure.stderr)
        let created = insecure.events.filter { $0["event"] as? String == "taskCreated" }
        XCTAssertFalse(created.isEmpty)
        XCTAssertTrue(created.allSatisfy { $0["insecure"] as? Bool == true }, "every attempt says it: \(created)")
        XCTAssertTrue(trusted.events.filter { $0["event"] as? String == "taskCreated" }.allSatisfy { $0["insecure"] == nil })

        // URLSession on Linux has no API for it: refused by name, never ignored.
        let refused = try reqtop(["run", plan, "--transport", "urlsession", "--no-tui", "--cacert", pki.caFile])
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.contains("need --transport nio"), refused.stderr)
    }

    func testAnExpiredOrWrongHostCertificateFailsEvenFromATrustedAuthority() throws {
        for (name, pki) in [("expired", try TestCertificates.make(expired: true)), ("wrong host", try TestCertificates.make(hosts: ["wrong.example"]))] {
            defer { pki.remove() }
            let server = try FaultServer.start(tls: pki)
            defer { server.stop() }
            let run = try reqtop(["run", try plan(server.url("/status/200")), "--transport", "nio", "--no-tui", "--cacert", pki.caFile])
            XCTAssertEqual(run.status, 1, "\(name): \(run.stderr)")
            XCTAssertNotNil(errorCode(run), "\(name): the attempt failed in TLS")
        }
    }

    func testBadTLSInputIsNamedBeforeAnyRequest() throws {
        let pki = try TestCertificates.make()
        defer { pki.remove() }
        let notPEM = NSTemporaryDirectory() + "not-a-cert-\(UUID().uuidString.prefix(8)).pem"
        try "hello\n".write(toFile: notPEM, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: notPEM) }
        let plan = try plan(URL(string: "https://127.0.0.1:1/")!)
        let cases: [([String], String)] = [
            (["--cacert", "/nonexistent/ca.pem"], "--cacert /nonexistent/ca.pem: no such file"),
            (["--cacert", notPEM], "--cacert \(notPEM): not a PEM certificate file"),
            (["--insecure", "--cacert", pki.caFile], "--insecure and --cacert contradict each other"),
            (["--cert", pki.serverCertificateFile], "--cert needs --key"),
            (["--cert", pki.caFile, "--key", pki.serverKeyFile], "--key \(pki.serverKeyFile) does not match the certificate in --cert \(pki.caFile)"),
        ]
        for (flags, message) in cases {
            let run = try reqtop(["run", plan, "--transport", "nio", "--no-tui"] + flags)
            XCTAssertEqual(run.status, 2, "\(flags): \(run.stderr)")
            XCTAssertTrue(run.stderr.contains(message), "\(flags): \(run.stderr)")
            XCTAssertNil(run.events.first { $0["event"] as? String == "taskCreated" }, "\(flags): nothing was sent")
        }
    }
}
