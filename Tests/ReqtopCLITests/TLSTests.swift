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

    private func tlsFailure(_ run: ReqtopRun) -> (code: Int?, tls: String?) {
        let error = run.events.first { $0["event"] as? String == "taskCompleted" }.flatMap { $0["error"] as? [String: Any] }
        return (error?["code"] as? Int, error?["tls"] as? String)
    }

    /// Each TLS failure is its own kind, read from BoringSSL's codes and NIOSSL's types (the
    /// `tls` field of the error, and URLSession's code for it). Before, all of these were
    /// -1202 or -1200 whatever the cause, told apart only by the words of NIOSSL's message.
    func testEachTLSFailureIsNamedByItsKindOnNIO() throws {
        let pki = try TestCertificates.make()
        let stranger = try TestCertificates.make()
        let expired = try TestCertificates.make(expired: true)
        let wrongHost = try TestCertificates.make(hosts: ["wrong.example"])
        defer { [pki, stranger, expired, wrongHost].forEach { $0.remove() } }
        let plain = try FaultServer.start()
        defer { plain.stop() }
        let mutual = try FaultServer.start(tls: pki, clientCertificates: pki)
        defer { mutual.stop() }
        let https = { (server: FaultServer) in URL(string: "https://127.0.0.1:\(server.port)/status/200")! }

        struct Case { let name: String; let server: FaultServer?; let url: URL?; let flags: [String]; let code: Int; let tls: String }
        var cases: [Case] = []
        for (name, certificates, trusted, code, kind) in [("expired", expired, expired.caFile, -1201, "expired"),
                                                          ("wrong host", wrongHost, wrongHost.caFile, -1202, "wrong-host"),
                                                          ("unknown authority", stranger, pki.caFile, -1202, "untrusted")] {
            let server = try FaultServer.start(tls: certificates)
            cases.append(Case(name: name, server: server, url: https(server), flags: ["--cacert", trusted], code: code, tls: kind))
        }
        cases.append(Case(name: "no client certificate", server: nil, url: https(mutual), flags: ["--cacert", pki.caFile],
                          code: -1206, tls: "client-certificate-required"))
        cases.append(Case(name: "a client certificate from another authority", server: nil, url: https(mutual),
                          flags: ["--cacert", pki.caFile, "--cert", stranger.clientCertificateFile, "--key", stranger.clientKeyFile],
                          code: -1205, tls: "client-certificate-rejected"))
        cases.append(Case(name: "not TLS at all", server: nil, url: URL(string: "https://127.0.0.1:\(plain.port)/status/200")!, flags: [],
                          code: -1200, tls: "handshake-failed"))
        defer { cases.forEach { $0.server?.stop() } }
        for item in cases {
            let run = try reqtop(["run", try plan(item.url!), "--transport", "nio", "--no-tui"] + item.flags)
            XCTAssertEqual(run.status, 1, "\(item.name): \(run.stderr)")
            let failure = tlsFailure(run)
            XCTAssertEqual(failure.code, item.code, "\(item.name): \(run.stdout)")
            XCTAssertEqual(failure.tls, item.tls, "\(item.name): \(run.stdout)")
        }

        // And with the right client certificate, the same server answers.
        let trusted = try reqtop(["run", try plan(https(mutual)), "--transport", "nio", "--no-tui",
                                  "--cacert", pki.caFile, "--cert", pki.clientCertificateFile, "--key", pki.clientKeyFile])
        XCTAssertEqual(trusted.status, 0, trusted.stderr + trusted.stdout)
    }

    /// URLSession on Linux hands on only libcurl's words; OpenSSL's verify reason in them
    /// names the same kinds (it cannot be given --cacert, so an unknown authority is what it meets).
    func testURLSessionNamesAnUnknownAuthorityAndANonTLSServerToo() throws {
        let pki = try TestCertificates.make()
        defer { pki.remove() }
        let server = try FaultServer.start(tls: pki)
        defer { server.stop() }
        let plain = try FaultServer.start()
        defer { plain.stop() }
        let untrusted = try reqtop(["run", try plan(server.url("/status/200")), "--transport", "urlsession", "--no-tui"])
        XCTAssertEqual(tlsFailure(untrusted).tls, "untrusted", untrusted.stdout)
        XCTAssertEqual(tlsFailure(untrusted).code, -1202, untrusted.stdout)
        let notTLS = try reqtop(["run", try plan(URL(string: "https://127.0.0.1:\(plain.port)/status/200")!), "--transport", "urlsession", "--no-tui"])
        XCTAssertEqual(tlsFailure(notTLS).tls, "handshake-failed", notTLS.stdout)
        XCTAssertEqual(tlsFailure(notTLS).code, -1200, notTLS.stdout)
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
