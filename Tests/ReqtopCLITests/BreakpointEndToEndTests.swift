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
        // `later` starts when `first` ends, 5 s in: time to set the breakpoint first, even on a
        // busy machine (2.5 s was sometimes too short on CI).
        try Data(#"""
            {"requests": [{"id": "first", "url": "{{fault}}/delay/5000"},
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

/// The same terms, the prompt and compare in the real binary (#42): a filter `host:PORT`
/// set as a breakpoint stops the request on that port and says what it matches; the answer
/// prompt's `503` is replaced by what is typed; compare marks one inserted header and one
/// inserted body line (and the length that grew), not every line after them.
final class ExactMonitorEndToEndTests: TerminalTestCase {
    func testAHostPortBreakpointATypedAnswerAndACompare() throws {
        let folder = try makeTemporaryFolder("exact-tmux")
        let plan = folder + "/plan.json"
        try Data(#"""
            {"retry": {"maxAttempts": 1}, "requests": [
              {"id": "twin-a", "url": "{{fault}}/echo", "headers": {"X-Trace": "t"}},
              {"id": "twin-b", "url": "{{fault}}/echo", "headers": {"X-Trace": "t", "X-Extra": "1"}},
              {"id": "first", "url": "{{fault}}/delay/5000"},
              {"id": "later", "url": "{{fault}}/status/404", "dependsOn": ["first"]}]}
            """#.utf8).write(to: URL(fileURLWithPath: plan))
        try openShell(width: 180, height: 40)
        try keys("\(CommandLineTests.binary.path) run \(plan); echo \"exit\"\"-status-$?\"", "Enter")
        let table = try waitForScreen("the run") { $0.contains("first") && $0.contains("twin-b") }
        let port = try XCTUnwrap(table.firstMatch(of: /127\.0\.0\.1:(\d+)/).map { String($0.1) }, table)

        // The filter's host:PORT, then B: the same text picks the same requests.
        try keys("/")
        try tmux(["send-keys", "-t", session, "-l", "host:\(port)"])
        try keys("Enter", "B")
        try waitForScreen("the prompt prefilled with the filter") { $0.contains("break before sending: host:\(port)_") }
        try tmux(["send-keys", "-t", session, "-l", " path:/status"])
        try keys("Enter")
        try waitForScreen("the breakpoint set, with what it matches now") {
            $0.contains("stops host:\(port) path:/status before sending") && $0.contains("matches 1 of the 4 requests so far")
        }
        try waitForScreen("later stopped", timeout: 20) { $0.split(separator: "\n").contains { $0.contains("later") && $0.contains("break") } }

        // The answer prompt: 503 is a suggestion; typing replaces it.
        try keys("/")
        try keys("C-u")
        try tmux(["send-keys", "-t", session, "-l", "later"])
        try keys("Enter", "Enter")
        try waitForScreen("later's detail") { $0.contains("STOPPED at breakpoint 1") }
        try keys("a")
        try waitForScreen("the answer prompt") { $0.contains("answer later with (status [body]): 503_") && $0.contains("typing replaces it") }
        try tmux(["send-keys", "-t", session, "-l", #"200 {"ok":true}"#])
        try keys("Enter")
        try waitForScreen("answered with what was typed") { $0.contains("later: answered 200") }
        try keys("Tab", "Tab", "Tab")
        try waitForScreen("the body given") { $0.contains(#""ok": true"#) }

        // Compare: one header and one body line only on the right.
        try keys("Escape", "/", "C-u")
        try tmux(["send-keys", "-t", session, "-l", "twin-a"])
        try keys("Enter", "j", "=", "/", "C-u")
        try tmux(["send-keys", "-t", session, "-l", "twin-b"])
        try keys("Enter", "j", "=")
        // Waits for the whole view (the body's line is its last), not its first line.
        let compare = try waitForScreen("the comparison") {
            ($0.contains("lines differ") || $0.contains("line differs")) && $0.contains(#""x-extra""#)
        }
        // The inserted header, the inserted body line, and the length that grew with them.
        XCTAssert(compare.contains("3 lines differ"), compare)
        XCTAssert(compare.split(separator: "\n").contains { $0.contains("≠") && $0.contains("Content-Length: 152") }, compare)
        XCTAssert(compare.split(separator: "\n").contains { $0.contains(">") && $0.contains("X-Extra: 1") }, compare)
        XCTAssert(compare.split(separator: "\n").contains { $0.contains(">") && $0.contains(#""x-extra": "1""#) }, compare)
        try keys("Escape", "q")
        try waitForScreen("the exit") { $0.contains("exit-status-") }
    }
}
