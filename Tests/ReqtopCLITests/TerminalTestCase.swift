import Foundation
import XCTest

/// A test case that drives the real binary in a real terminal: tmux runs it, `send-keys`
/// types, `capture-pane` reads the screen. Each test gets its own tmux session.
class TerminalTestCase: XCTestCase {
    var session = ""
    /// A session that lives as long as the suite: when a test's session is the server's last,
    /// killing it stops the tmux server, and the next test's `new-session` could reach the
    /// server while it was exiting and fail (a whole test then saw an empty screen).
    private static let keeper = "reqtop-e2e-keeper-\(ProcessInfo.processInfo.processIdentifier)"

    override class func setUp() {
        super.setUp()
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux") {
            _ = try? spawnAndWait(["/usr/bin/tmux", "new-session", "-d", "-s", keeper, "sleep", "3600"])
        }
    }

    override class func tearDown() {
        _ = try? spawnAndWait(["/usr/bin/tmux", "kill-session", "-t", keeper])
        super.tearDown()
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux") else {
            throw XCTSkip("tmux is not installed (.ci/run installs it)")
        }
        session = "reqtop-e2e-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(6))"
    }

    override func tearDown() {
        _ = try? tmux(["kill-session", "-t", session])
    }

    /// Runs a tmux command. Only `capture-pane` runs through `Process` with a pipe: the other
    /// commands may start the tmux server, a daemon that keeps the descriptors it was given,
    /// and Foundation's `Process.waitUntilExit()` on Linux then never returns. Those are
    /// spawned with `posix_spawn` and waited for with `waitpid`.
    @discardableResult
    func tmux(_ arguments: [String]) throws -> String {
        guard arguments.first == "capture-pane" else {
            var status = try spawnAndWait(["/usr/bin/tmux"] + arguments)
            // A session must exist before anything is typed into it: try again, briefly.
            for _ in 0..<3 where status != 0 && arguments.first == "new-session" {
                usleep(200_000)
                status = try spawnAndWait(["/usr/bin/tmux"] + arguments)
            }
            return ""
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/tmux")
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// Opens this test's terminal, `width`×`height`, running a plain bash with UTF-8 and the
    /// extra `environment` (`NAME=value`), for `keys` to type into.
    func openShell(width: Int, height: Int, environment: [String] = []) throws {
        try tmux(["new-session", "-d", "-s", session, "-x", "\(width)", "-y", "\(height)", "env", "LANG=C.UTF-8"] + environment
                 + ["bash", "--norc", "--noprofile"])
    }

    func screen() throws -> String {
        try tmux(["capture-pane", "-t", session, "-p"])
    }

    func keys(_ keys: String...) throws {
        try tmux(["send-keys", "-t", session] + keys)
    }

    /// Polls the screen until `condition` holds.
    @discardableResult
    func waitForScreen(_ what: String, timeout: TimeInterval = 15, file: StaticString = #filePath, line: UInt = #line,
                               _ condition: (String) -> Bool) throws -> String {
        let end = Date().addingTimeInterval(timeout)
        var last = ""
        while Date() < end {
            last = try screen()
            // A capture can land in the middle of the monitor's redraw (the new view's top
            // half over the old view's bottom line), so what is returned is a second capture
            // a moment later, once it still holds: the redraw has finished by then.
            if condition(last) {
                usleep(60_000)
                let again = try screen()
                if condition(again) { return again }
                continue
            }
            usleep(100_000)
        }
        XCTFail("timed out waiting for \(what); the screen was:\n\(last)", file: file, line: line)
        return last
    }
}

/// Runs a program with stdin, stdout and stderr on /dev/null, waits for it and returns its
/// exit status.
@discardableResult
func spawnAndWait(_ argv: [String]) throws -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for fd in [Int32(0), 1, 2] {
        posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
    }
    var cArguments = argv.map { strdup($0) } + [nil]
    defer { cArguments.forEach { free($0) } }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, argv[0], &actions, nil, &cArguments, environ)
    guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EINVAL) }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1, errno == EINTR {}
    return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
}
