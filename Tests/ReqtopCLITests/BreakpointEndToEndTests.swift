import Foundation
import XCTest

/// A breakpoint in the real binary, in a real terminal (#33): `B` on `/echo`, the operation
/// stops before it is sent, `e` edits a header, and the fault server's echo shows the edit.
final class BreakpointEndToEndTests: TerminalTestCase {
    func testStopEditAndContinue() throws {
        let folder = NSTemporaryDirectory() + "break-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plan = folder + "/plan.json", editor = folder + "/editor.sh"
        // `later` starts when `first` ends, 2.5 s in: time to set the breakpoint first.
        try Data(#"""
            {"requests": [{"id": "first", "url": "{{fault}}/delay/2500"},
                          {"id": "later", "url": "{{fault}}/echo", "headers": {"X-Trace": "t-1"}, "dependsOn": ["first"]}]}
            """#.utf8).write(to: URL(fileURLWithPath: plan))
        try "#!/bin/sh\nsed -i 's/t-1/t-at-the-breakpoint/' \"$1\"\n".write(toFile: editor, atomically: true, encoding: .utf8)
        chmod(editor, 0o755)
        let binary = CommandLineTests.binary.path
        try openShell(width: 160, height: 40)
        try keys("EDITOR=\(editor) \(binary) run \(plan); echo \"exit\"\"-status-$?\"", "Enter")
        try waitForScreen("the run") { $0.contains("first") }
        try keys("B")
        try waitForScreen("the breakpoint prompt") { $0.contains("break before sending:") }
        try tmux(["send-keys", "-t", session, "-l", "path:/echo"])
        try keys("Enter")
        try waitForScreen("the breakpoint set") { $0.contains("BREAK: breakpoint 1 stops path:/echo before sending") }
        let stopped = try waitForScreen("the operation stopped", timeout: 20) { screen in
            screen.split(separator: "\n").contains { $0.contains("later") && $0.contains("break") }
        }
        XCTAssertFalse(stopped.contains("ENDED"), "the run waits for the person:\n\(stopped)")
        try keys("G", "Enter")
        try waitForScreen("the stopped operation's detail") { $0.contains("STOPPED at breakpoint 1") || $0.contains("held: waiting for you: breakpoint 1") }
        try keys("e")
        try waitForScreen("the edit goes on") { $0.contains("later: edited and continued") }
        try waitForScreen("the run's end") { $0.contains("ENDED: every operation finished") }
        try keys("Tab", "Tab", "Tab")
        try waitForScreen("the server's echo of the edited header") { $0.contains(#""x-trace": "t-at-the-breakpoint""#) }
        try keys("q")
        try waitForScreen("the exit") { $0.contains("exit-status-0") }
    }
}
