import FaultServer
import Foundation
import XCTest

/// A program "elsewhere" (on 127.0.0.1 over TCP, mutual TLS with certificates made here),
/// attached to under tmux: it only watches unless the program accepts commands, and the
/// program's log names who cancelled what.
final class RemoteAttachEndToEndTests: TerminalTestCase {
    /// Starts the demo with a TLS endpoint on a free port; returns it and the port it printed.
    func startProgram(_ pki: TestCertificates, _ extra: [String], directory: String) throws -> (AttachTests.Launched, Int) {
        let program = try AttachTests.launch(["demo", "--no-tui", "--listen-on", "tls://127.0.0.1:0", "--listen-cert", pki.serverCertificateFile,
                                              "--listen-key", pki.serverKeyFile, "--listen-client-ca", pki.caFile] + extra, runtimeDirectory: directory)
        var port = 0
        AttachTests.waitFor("the endpoint's address on stderr") {
            guard let range = program.stderr().range(of: #"on tls://127\.0\.0\.1:(\d+)"#, options: .regularExpression) else { return false }
            port = Int(program.stderr()[range].split(separator: ":").last ?? "") ?? 0
            return port > 0
        }
        return (program, port)
    }

    func attach(_ port: Int, _ pki: TestCertificates) throws {
        let binary = CommandLineTests.binary.path
        try keys("\(binary) attach tls://127.0.0.1:\(port) --cacert \(pki.caFile) --cert \(pki.clientCertificateFile) --key \(pki.clientKeyFile); echo \"exit\"\"-status-$?\"", "Enter")
    }

    func selectTheDownload() throws {
        try keys("/", "C-u")
        try tmux(["send-keys", "-t", session, "-l", "w1-download"])
        try keys("Enter")
        try waitForScreen("the download row") { $0.contains("w1-download") && $0.contains("▶ running") }
    }

    func cancelTheDownload() throws {
        try selectTheDownload()
        try keys("X")
        try waitForScreen("the question") { $0.contains("Cancel w1-download? (y/n)") }
        try keys("y")
    }

    func testARemoteMonitorSendsCommandsOnlyWhereTheProgramSaysSo() throws {
        let directory = try AttachTests.makeRuntimeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pki = try TestCertificates.make()
        defer { pki.remove() }
        try openShell(width: 140, height: 40)

        // Without --accept-commands: it watches, and a cancel is refused with the reason.
        let (watched, watchedPort) = try startProgram(pki, [], directory: directory)
        defer { if watched.process.isRunning { watched.process.terminate() } }
        try attach(watchedPort, pki)
        try waitForScreen("the program's rows over TLS") { $0.contains("ATTACHED reqtop demo") && $0.contains("READ-ONLY") && $0.contains("w1-profile") }
        // Said at the key: no question whose yes the program would refuse.
        try selectTheDownload()
        try keys("X")
        try waitForScreen("the refusal") { $0.contains("read-only: the program takes no commands from this monitor") && !$0.contains("(y/n)") }
        XCTAssertFalse(watched.stdout().contains(#""event":"cancelled","by":"monitor"#))
        XCTAssert(watched.stderr().contains("remote monitor CN=reqtop test client attached from 127.0.0.1:"), watched.stderr())
        try keys("q")
        try waitForScreen("the exit") { $0.contains("exit-status-0") }
        watched.process.terminate()

        // With it: the cancel reaches the program, which names who sent it.
        let (steered, steeredPort) = try startProgram(pki, ["--accept-commands"], directory: directory)
        defer { if steered.process.isRunning { steered.process.terminate() } }
        try keys("clear", "Enter")
        try attach(steeredPort, pki)
        try waitForScreen("the program's rows") { $0.contains("ATTACHED reqtop demo") && !$0.contains("READ-ONLY") && $0.contains("w1-profile") }
        try cancelTheDownload()
        try waitForScreen("the answer") { $0.contains("cancelled w1-download") }
        AttachTests.waitFor("the program's output to say who cancelled it") {
            steered.stdout().contains(#""op":"w1-download","attempt":1,"event":"cancelled","by":"monitor CN=reqtop test client""#)
        }
        XCTAssert(steered.stderr().contains("remote monitor CN=reqtop test client (127.0.0.1:"), steered.stderr())
        XCTAssert(steered.stderr().contains("cancel w1-download → cancelled w1-download"), steered.stderr())
        try keys("q")
    }

    /// The program on the other side goes away and comes back on its port: the monitor says
    /// so and connects again by itself, to the new program's rows.
    func testARemoteMonitorConnectsAgainByItself() throws {
        let directory = try AttachTests.makeRuntimeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pki = try TestCertificates.make()
        defer { pki.remove() }
        let port = try ProxyTests.freePort()
        let tls = ["--listen-on", "tls://127.0.0.1:\(port)", "--listen-cert", pki.serverCertificateFile, "--listen-key", pki.serverKeyFile,
                   "--listen-client-ca", pki.caFile]
        let first = try AttachTests.launch(["demo", "--no-tui"] + tls, runtimeDirectory: directory)
        defer { if first.process.isRunning { first.process.terminate() } }
        AttachTests.waitFor("the first program's endpoint") { first.stderr().contains("on tls://127.0.0.1:\(port)") }
        try openShell(width: 140, height: 30)
        try attach(port, pki)
        try waitForScreen("the first program") { $0.contains("ATTACHED reqtop demo \(first.process.processIdentifier)") }

        first.process.terminate()
        first.process.waitUntilExit()
        try waitForScreen("the monitor to say it is connecting again") { $0.contains("connecting again") }
        let second = try AttachTests.launch(["demo", "--no-tui"] + tls, runtimeDirectory: directory)
        defer { if second.process.isRunning { second.process.terminate() } }
        try waitForScreen("the monitor back, on the new program") {
            $0.contains("ATTACHED reqtop demo \(second.process.processIdentifier)") && $0.contains("(reconnected at ") && $0.contains("w1-")
        }
        try keys("q")
    }

    /// Bad input on the command line: named, exit status 2.
    func testMissingCertificatesAndBadAddressesAreNamed() throws {
        let cases: [([String], String)] = [
            (["attach", "tls://127.0.0.1:9"], "needs --cacert, --cert, --key"),
            (["attach", "tls://127.0.0.1", "--cacert", "/nonexistent"], "expected tls://ADDR:PORT"),
            (["attach", "tls://127.0.0.1:9", "--cacert", "/nonexistent.pem", "--cert", "/x", "--key", "/y"], "--cacert /nonexistent.pem: no such file"),
            (["demo", "--listen-on", "tls://127.0.0.1:0"], "--listen-on needs --listen-cert, --listen-key, --listen-client-ca"),
            (["demo", "--listen-on", "tcp://127.0.0.1:0"], "must start with tls://"),
            (["demo", "--accept-commands"], "--accept-commands needs --listen-on"),
            (["demo", "--listen-on", "tls://127.0.0.1:0", "--listen-cert", "/nonexistent.pem", "--listen-key", "/x", "--listen-client-ca", "/y"],
             "the endpoint's certificate /nonexistent.pem: no such file"),
            (["demo", "--listen-on", "tls://127.0.0.1:0", "--listen-cert", "/etc/passwd", "--listen-key", "/x", "--listen-client-ca", "/y"],
             "the endpoint's certificate /etc/passwd: not a PEM certificate"),
        ]
        for (arguments, expected) in cases {
            let directory = try AttachTests.makeRuntimeDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let run = try AttachTests.launch(arguments + ["--no-tui"], runtimeDirectory: directory)
            run.process.waitUntilExit()
            XCTAssertEqual(run.process.terminationStatus, 2, "\(arguments): \(run.stderr())")
            XCTAssert(run.stderr().contains(expected), "\(arguments): \(run.stderr())")
        }
    }
}
