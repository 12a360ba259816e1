import FaultServer
import Foundation
import XCTest

/// `reqtop proxy` as a person runs it, including one who is not root (CI is root, where a
/// folder or key made in the wrong place would not show): the authority made in their own
/// config folder, closed to others; bad flags named with exit status 2; the headless proxy
/// serving curl and stopping cleanly on SIGTERM.
final class ProxyCommandTests: XCTestCase {
    /// A home folder the unprivileged user owns.
    private func home() throws -> String {
        let folder = try makeTemporaryFolder("proxy-home")
        chmod(folder, 0o755)
        if UnprivilegedUser.isRoot { try UnprivilegedUser.plant(folder) }
        return folder
    }

    func testTheAuthorityIsMadeInTheUsersOwnConfigFolderClosedToOthers() throws {
        let home = try home()
        let first = try reqtop(["proxy", "--ca"], unprivileged: true, environment: ["HOME": home, "XDG_CONFIG_HOME": ""])
        XCTAssertEqual(first.status, 0, first.stderr)
        let certificate = home + "/.config/reqtop/ca/ca.pem"
        XCTAssertTrue(first.stdout.contains("certificate: \(certificate)"), first.stdout)
        XCTAssertTrue(first.stdout.contains("(made now)"), first.stdout)
        XCTAssertTrue(first.stdout.contains("NODE_EXTRA_CA_CERTS=\(certificate)"), first.stdout)
        XCTAssertTrue(first.stdout.contains("update-ca-certificates --fresh"), "and how to take it back: \(first.stdout)")
        XCTAssertFalse(first.stdout.contains("PRIVATE KEY"), "the key is never printed")
        var info = stat()
        XCTAssertEqual(stat(home + "/.config/reqtop/ca", &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o700)
        XCTAssertEqual(stat(home + "/.config/reqtop/ca/ca-key.pem", &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        if UnprivilegedUser.isRoot { XCTAssertEqual(info.st_uid, UnprivilegedUser.uid, "the key is the user's own") }
        let again = try reqtop(["proxy", "--ca"], unprivileged: true, environment: ["HOME": home, "XDG_CONFIG_HOME": ""])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertFalse(again.stdout.contains("(made now)"), "made once: \(again.stdout)")
    }

    func testBadFlagsAreNamedWithStatus2() throws {
        let cases: [([String], String)] = [
            (["proxy", "--bind", "0.0.0.0"], "--allow-remote"),
            (["proxy", "--bind", "0.0.0.0", "--allow-remote"], "--auth"),
            (["proxy", "--port", "70000"], "--port"),
            (["proxy", "--auth", "nocolon"], "user:password"),
            (["proxy", "--no-intercept", "--tunnel", "example.com"], "--no-intercept"),
            (["proxy", "--transport", "urlsession"], "NIO transport"),
        ]
        for (arguments, named) in cases {
            let result = try reqtop(arguments, timeout: 30)
            XCTAssertEqual(result.status, 2, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains(named), "\(arguments): \(result.stderr)")
        }
        // A key someone opened to others is refused by name, and nothing listens.
        let home = try makeTemporaryFolder("proxy-badkey")
        XCTAssertEqual(try reqtop(["proxy", "--ca", "--ca-dir", home + "/ca"]).status, 0)
        chmod(home + "/ca/ca-key.pem", 0o644)
        let refused = try reqtop(["proxy", "--no-tui", "--ca-dir", home + "/ca", "--port", "0"], timeout: 30)
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.contains("ca-key.pem is open to other users"), refused.stderr)
    }

    func testTheHeadlessProxyServesCurlAsAUserWhoIsNotRootAndStopsOnSIGTERM() throws {
        let upstream = try FaultServer.start()
        defer { upstream.stop() }
        let home = try home()
        let port = 30_000 + Int(getpid() % 20_000)
        let process = Process()
        let arguments = ["proxy", "--no-tui", "--port", String(port)]
        if UnprivilegedUser.isRoot {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = UnprivilegedUser.setprivArguments + [try UnprivilegedUser.binary()] + arguments
        } else {
            process.executableURL = CommandLineTests.binary
            process.arguments = arguments
        }
        process.environment = ProcessInfo.processInfo.environment.merging(["HOME": home, "XDG_CONFIG_HOME": ""]) { $1 }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        nonisolated(unsafe) var stdout = Data(), stderr = Data()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { stdout = out.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: group) { stderr = err.fileHandleForReading.readDataToEndOfFile() }
        defer { if process.isRunning { process.terminate() } }
        // Listening once a connection is taken.
        let deadline = Date().addingTimeInterval(20)
        var answer = ""
        while Date() < deadline {
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            curl.arguments = ["-s", "--max-time", "10", "-x", "http://127.0.0.1:\(port)", upstream.baseURL.absoluteString + "/status/200"]
            curl.environment = [:]
            let pipe = Pipe()
            curl.standardOutput = pipe
            try curl.run()
            answer = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            curl.waitUntilExit()
            if curl.terminationStatus == 0 { break }
            usleep(100_000)
        }
        XCTAssertEqual(answer, "status 200\n")
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        group.wait()
        let printed = String(decoding: stderr, as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 0, printed)
        XCTAssertTrue(printed.contains("made a certificate authority for this machine in \(home)/.config/reqtop/ca"), printed)
        XCTAssertTrue(printed.contains("proxy listening on http://127.0.0.1:\(port)"), printed)
        let events = String(decoding: stdout, as: UTF8.self)
        XCTAssertTrue(events.contains(#""op":"c1-r1""#) && events.contains(#""event":"finished","outcome":"success","status":200"#), events)
    }
}
