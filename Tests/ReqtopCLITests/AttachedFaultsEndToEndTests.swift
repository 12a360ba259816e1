import Foundation
import XCTest

/// Faults from an attached monitor, on the real binaries (#33's safety): the program takes
/// them only with `--accept-faults`, the monitor's header says FAULTS ON, and when the
/// monitor is killed with SIGKILL its fault is removed from the program.
final class AttachedFaultsEndToEndTests: TerminalTestCase {
    func testAKilledMonitorsFaultsAreRemovedFromTheProgram() throws {
        let directory = try AttachTests.makeRuntimeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let program = try AttachTests.launch(["demo", "--no-tui", "--listen", "--accept-faults"], runtimeDirectory: directory)
        defer { if program.process.isRunning { program.process.terminate() } }
        try AttachTests.waitForSocket(in: directory)
        // The socket exists a moment before the line that names it is written.
        AttachTests.waitFor("the endpoint's line, saying it takes faults") { program.stderr().contains("(takes faults)") }

        let binary = CommandLineTests.binary.path
        try openShell(width: 160, height: 40, environment: ["XDG_RUNTIME_DIR=\(directory)"])
        try keys("\(binary) attach; echo \"exit\"\"-status-$?\"", "Enter")
        try waitForScreen("the program's rows") { $0.contains("ATTACHED reqtop demo") && $0.contains("w1-profile") }
        try keys("H")
        try waitForScreen("the Hosts view") { $0.contains("INJECTED") }
        try keys("!")
        let set = try waitForScreen("the program's answer") { $0.contains("FAULTS ON: injecting status 503 into every request to") }
        XCTAssert(set.split(separator: "\n")[0].contains("FAULTS ON"), "the attached monitor's header says so:\n\(set)")
        AttachTests.waitFor("the program to inject, naming the monitor") {
            program.stdout().contains(#""event":"injected","fault":"status 503""#) && program.stdout().contains(#""by":"attached monitor "#)
        }

        // The monitor dies without a word: its fault must not outlive it.
        let attach = try XCTUnwrap(Self.pid(of: "\(binary) attach"), "the attach process")
        XCTAssertEqual(kill(attach, SIGKILL), 0)
        AttachTests.waitFor("the program to remove the dead monitor's fault") {
            program.stderr().contains("removed 1 fault set by a monitor that detached")
        }
        let injectedBefore = program.stdout().components(separatedBy: #""event":"injected""#).count
        usleep(1_500_000)
        XCTAssertEqual(program.stdout().components(separatedBy: #""event":"injected""#).count, injectedBefore,
                       "nothing is injected once the monitor is gone")
        _ = try? tmux(["send-keys", "-t", session, "reset", "Enter"])
    }

    func testAProgramWithoutAcceptFaultsRefusesThem() throws {
        let run = try reqtop(["demo", "--no-tui", "--accept-faults", "--scenario", "quick"])
        XCTAssertEqual(run.status, 2)
        XCTAssert(run.stderr.contains("--accept-faults needs --listen"), run.stderr)
        let both = try reqtop(["demo", "--no-tui", "--listen", "--read-only", "--accept-faults", "--scenario", "quick"])
        XCTAssertEqual(both.status, 2)
        XCTAssert(both.stderr.contains("--accept-faults and --read-only disagree"), both.stderr)
    }

    /// The newest process whose command line is `command` (pgrep -n -f).
    static func pid(of command: String) -> pid_t? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/pgrep")
        process.arguments = ["-n", "-f", command]
        let out = Pipe()
        process.standardOutput = out
        try? process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return pid_t(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
