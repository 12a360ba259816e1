import Foundation
import XCTest

/// `reqtop attach --all` under tmux: three programs in one monitor, a cancel that reaches the
/// program that owns the row, a program that starts later joining, and one that exits
/// staying on screen, marked ended.
final class ManyProgramsEndToEndTests: TerminalTestCase {
    func testThreeProgramsInOneMonitor() throws {
        let directory = try AttachTests.makeRuntimeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var programs = try (1...2).map { _ in try AttachTests.launch(["demo", "--no-tui", "--listen"], runtimeDirectory: directory) }
        defer { programs.forEach { if $0.process.isRunning { $0.process.terminate() } } }
        try AttachTests.waitForSocket(in: directory, count: 2)

        let binary = CommandLineTests.binary.path
        try openShell(width: 150, height: 40, environment: ["XDG_RUNTIME_DIR=\(directory)"])
        try keys("\(binary) attach --all; echo \"exit\"\"-status-$?\"", "Enter")
        try waitForScreen("two programs") { $0.contains("ATTACHED 2 programs") }

        // A third program starts later and joins.
        programs.append(try AttachTests.launch(["demo", "--no-tui", "--listen"], runtimeDirectory: directory))
        let pids = programs.map { $0.process.processIdentifier }
        let all = try waitForScreen("rows of all three") { screen in
            screen.contains("ATTACHED 3 programs") && pids.allSatisfy { screen.contains("\($0)/w1-") && screen.contains("reqtop demo \($0)") }
        }
        XCTAssertFalse(all.contains("ended"), all)

        // Cancel the second program's download: it reaches that program, and only that one.
        let target = "\(pids[1])/w1-download"
        try keys("/")
        try tmux(["send-keys", "-t", session, "-l", target])
        try keys("Enter")
        try waitForScreen("the download row") { $0.contains(target) && $0.contains("▶ running") }
        try keys("X")
        try waitForScreen("the question") { $0.contains("Cancel \(target)? (y/n)") }
        try keys("y")
        try waitForScreen("the answer, naming the program") { $0.contains("reqtop demo \(pids[1]): cancelled \(target)") }
        AttachTests.waitFor("the program's own output to report it") {
            programs[1].stdout().contains(#""op":"w1-download","attempt":1,"event":"cancelled","by":"monitor""#)
        }
        for other in [programs[0], programs[2]] {
            XCTAssertFalse(other.stdout().contains(#""event":"cancelled","by":"monitor""#), "only the row's program was told")
        }

        // The first program exits: the monitor says so, and its rows stay. (The second, whose
        // download was cancelled, may have ended by now too: the demo ends with its download.)
        programs[0].process.terminate()
        programs[0].process.waitUntilExit()
        try keys("/", "C-u")
        try tmux(["send-keys", "-t", session, "-l", "\(pids[0])/"])
        try keys("Enter")
        let ended = try waitForScreen("the program marked ended, its rows kept") { $0.contains(" ended)") && $0.contains("\(pids[0])/w1-profile") }
        XCTAssert(ended.contains("reqtop demo \(pids[0])"), ended)

        try keys("q")
        let after = try waitForScreen("the exit status") { $0.range(of: "exit-status-[0-9]", options: .regularExpression) != nil }
        XCTAssert(after.contains("exit-status-0"), after)
        // The goodbye counts programs as they were before leaving: those still running run on
        // (it said "(3 ended)" of programs that ran on: our own close read as their end).
        XCTAssert(after.contains("detached from 3 programs (") && after.contains("running on"), after)
    }
}
