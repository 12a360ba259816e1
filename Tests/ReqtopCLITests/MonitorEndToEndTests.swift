import Foundation
import XCTest

/// The real binary in a real terminal: tmux runs it, `send-keys` types, `capture-pane`
/// reads the screen.
final class MonitorEndToEndTests: TerminalTestCase {
    /// With the filter prompt open: shows only the download, cancels it with X and y, and
    /// waits for the answer.
    private func cancelTheDownload() throws {
        try tmux(["send-keys", "-t", session, "-l", "download"])
        try keys("Enter")
        try waitForScreen("the download row") { $0.contains("w1-download") && $0.contains("▶ running") }
        try keys("X")
        try waitForScreen("the question") { $0.contains("Cancel w1-download? (y/n)") }
        try keys("y")
        try waitForScreen("the cancellation") { $0.contains("⊘ cancelled") && $0.contains("cancelled w1-download") }
    }

    func testTheDemoInTheMonitor() throws {
        let binary = CommandLineTests.binary.path
        // A shell, so that after quitting we can check the terminal still works.
        try openShell(width: 120, height: 36, environment: ["TERM=screen-256color"])
        // The markers are split in the typed command ("exit""-status") so that only the output matches.
        try keys("\(binary) demo --once; echo \"exit\"\"-status-$?\"", "Enter")

        // Rows and a live countdown.
        try waitForScreen("operations") { $0.contains("w1-profile") && $0.contains("✓ ok") }
        try waitForScreen("a backoff countdown") { screen in
            screen.split(separator: "\n").contains { $0.contains("↻ backoff") && $0.range(of: #"\d+\.\ds +\d"#, options: .regularExpression) != nil }
        }

        // r on an operation in backoff retries it now.
        try keys("/")
        try tmux(["send-keys", "-t", session, "-l", "w1-exhausted"])
        try keys("Enter")
        try waitForScreen("the filter") { $0.contains("filter: w1-exhausted") }
        // The backoff can end between the screen read and the key (a loaded CI machine took
        // over a second): then the answer is "not waiting to retry", and the next backoff is
        // tried, at most three times.
        var retried = false
        for _ in 0..<3 where !retried {
            try waitForScreen("w1-exhausted in backoff", timeout: 20) { $0.contains("↻ backoff") }
            try keys("r")
            let answer = try waitForScreen("the answer to r") {
                $0.contains("retrying w1-exhausted now") || $0.contains("w1-exhausted is not waiting to retry")
            }
            retried = answer.contains("retrying w1-exhausted now")
        }
        XCTAssertTrue(retried, "r skipped a backoff")

        // X asks, y cancels.
        try keys("/", "C-u")
        try cancelTheDownload()

        // p pauses and resumes.
        try keys("p")
        try waitForScreen("PAUSED") { $0.contains("PAUSED") }
        try keys("p")
        try waitForScreen("resumed") { !$0.contains("PAUSED") }

        // Clear the filter; the detail view and help.
        try keys("/", "C-u", "Enter")
        try waitForScreen("every row again") { $0.contains("w1-profile") && !$0.contains("filter:") }
        try keys("Enter")
        try waitForScreen("the detail view") { $0.contains("Events") && $0.contains("Retries") && $0.contains("queued") }
        try keys("Escape", "?")
        try waitForScreen("help") { $0.contains("reqtop keys") }
        try keys("Escape")

        // Resizing: down to 80×24, below the minimum, and back.
        try tmux(["resize-window", "-t", session, "-x", "80", "-y", "24"])
        let small = try waitForScreen("80×24") { $0.contains("STATE") && !$0.contains("TIMELINE") }
        XCTAssert(small.split(separator: "\n").allSatisfy { $0.count <= 80 })
        try tmux(["resize-window", "-t", session, "-x", "40", "-y", "8"])
        try waitForScreen("too small") { $0.contains("terminal too small") }
        try tmux(["resize-window", "-t", session, "-x", "120", "-y", "36"])
        try waitForScreen("full size") { $0.contains("TIMELINE") }

        // q quits, the terminal is restored, the shell works.
        try keys("q")
        let after = try waitForScreen("the exit status") { $0.range(of: "exit-status-[0-9]", options: .regularExpression) != nil }
        XCTAssert(after.contains("exit-status-1"), "some demo requests fail or are cancelled on purpose:\n\(after)")
        XCTAssert(after.contains("reqtop:") && after.contains("operations in"), "the summary after the monitor:\n\(after)")
        try keys("echo shell-ok-$((40 + 2))", "Enter")
        try waitForScreen("the shell to answer") { $0.contains("shell-ok-42") }
    }

    func testCtrlCAndSIGTERMRestoreTheTerminal() throws {
        let binary = CommandLineTests.binary.path
        try openShell(width: 100, height: 30)
        try keys("\(binary) demo --scenario quick; echo \"exit\"\"-status-$?\"", "Enter")
        try waitForScreen("the monitor") { $0.contains("w1-profile") }
        try keys("C-c")
        let afterInterrupt = try waitForScreen("the exit after Ctrl-C") { $0.range(of: "exit-status-[0-9]", options: .regularExpression) != nil }
        XCTAssert(afterInterrupt.contains("operations in"), "the summary after Ctrl-C:\n\(afterInterrupt)")
        // SIGTERM from outside, to a monitor in the foreground (a full-screen program in the
        // background would be stopped by the terminal). `--max-concurrent 5` marks this run.
        try keys("clear; \(binary) demo --max-concurrent 5; echo \"term\"\"-status-$?\"", "Enter")
        try waitForScreen("the monitor again") { $0.contains("w1-profile") }
        try spawnAndWait(["/usr/bin/pkill", "-TERM", "-f", "reqtop demo --max-concurrent 5"])
        let afterTerm = try waitForScreen("the exit after SIGTERM", timeout: 20) { $0.range(of: "term-status-[0-9]", options: .regularExpression) != nil }
        XCTAssert(afterTerm.contains("operations in"), "the summary after SIGTERM:\n\(afterTerm)")
        try keys("echo shell-ok-$((40 + 2))", "Enter")
        try waitForScreen("the shell to answer") { $0.contains("shell-ok-42") }
    }

    /// Before: ncurses' own Ctrl-Z handler ran on whichever thread the kernel picked, most
    /// Ctrl-Zs did not stop the monitor, and the `fg` typed next reached it as keys (`g`,
    /// then Enter opened a detail view).
    ///
    /// Under load about one Ctrl-Z in thirty, sent by tmux right after the monitor appeared,
    /// never reaches the process at all: no SIGTSTP is taken by the signal thread, none is
    /// pending, no 0x1A is read as a key, while the terminal has `isig` and the monitor's
    /// process group in the foreground (measured with a trace build, 2 of 60 and 6 of 80 launches
    /// with two busy loops beside them). A person presses it again; so does this test, once,
    /// and it types `fg` only when the process is stopped, so no key can go astray.
    func testCtrlZSuspendsAndFgResumesEveryTime() throws {
        let binary = CommandLineTests.binary.path
        try openShell(width: 120, height: 30)
        try keys("\(binary) demo; echo \"exit\"\"-status-$?\"", "Enter")
        try waitForScreen("the monitor") { $0.contains("w1-profile") }
        let pid = try XCTUnwrap(demoProcess(binary), "the demo's process")
        for round in 1...5 {
            usleep(300_000)
            try keys("C-z")
            if !waitUntil(timeout: 5, { Self.isStopped(pid) }) {
                print("Ctrl-Z number \(round) did not reach the monitor; pressing it again")
                try keys("C-z")
            }
            XCTAssert(waitUntil(timeout: 15, { Self.isStopped(pid) }), "the monitor stopped after Ctrl-Z number \(round)")
            try waitForScreen("the shell after Ctrl-Z number \(round)") { screen in
                screen.components(separatedBy: "Stopped").count - 1 == round && !screen.contains("w1-profile")
            }
            try keys("fg", "Enter")
            // The monitor's own header and table, not a row: after a Ctrl-Z pressed twice the
            // first rows have scrolled away (a clean-clone run saw FOLLOW at t=20 s, rows 43–68).
            try waitForScreen("the monitor back after fg number \(round)") { $0.contains("FOLLOW") && $0.contains("STATE") && $0.contains("TIMELINE") }
        }
        let screen = try screen()
        XCTAssertFalse(screen.contains("Events   Request"), "no key went astray into a detail view:\n\(screen)")
        try keys("q")
        try waitForScreen("the exit") { $0.contains("exit-status-") }
    }

    /// The process running `binary demo` (the one this test started in tmux).
    private func demoProcess(_ binary: String) -> Int32? {
        let candidates = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap { Int32($0) } ?? []
        return candidates.first { pid in
            guard let command = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            return command.split(separator: 0).map { String(decoding: $0, as: UTF8.self) } == [binary, "demo"]
        }
    }

    /// Whether the process is stopped (state `T` in /proc/PID/stat).
    private static func isStopped(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.range(of: ") ", options: .backwards) else { return false }
        return stat[close.upperBound...].first == "T"
    }

    private func waitUntil(timeout: TimeInterval, _ condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }

    func testAReplayInTheMonitor() throws {
        let recording = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: recording) }
        let live = try reqtop(["demo", "--scenario", "quick", "--no-tui", "--record", recording])
        XCTAssertEqual(live.status, 1)

        let binary = CommandLineTests.binary.path
        try openShell(width: 120, height: 30)
        try keys("\(binary) replay \(recording) --speed 0.25; echo \"exit\"\"-status-$?\"", "Enter")
        try waitForScreen("the replay") { $0.contains("REPLAY 0.25×") && $0.contains("w1-profile") }
        try keys(">")
        // The header says END at once; the rows follow on the next frame.
        let expected = [("w1-profile", "✓ ok"), ("w1-flaky", "✓ ok"), ("w1-not-found", "✗ failed"),
                        ("w1-hanging", "⊘ cancelled"), ("w1-exhausted", "✗ failed")]
        try waitForScreen("the end of the replay, with every operation as it ended live") { screen in
            screen.contains("END") && expected.allSatisfy { id, state in
                (screen.split(separator: "\n").first { $0.contains(id) } ?? "").contains(state)
            }
        }
        try keys("<")
        try waitForScreen("back at the start") { !$0.contains("END") }
        // X needs a selected row; right after the jump back the replay may not have shown one yet.
        try waitForScreen("a row again") { $0.contains("w1-profile") }
        try keys("+", "X")
        try waitForScreen("no cancelling in a replay") { $0.contains("nothing to cancel in a replay") }
        try keys("q")
        let after = try waitForScreen("the summary") { $0.range(of: "exit-status-[0-9]", options: .regularExpression) != nil }
        XCTAssert(after.contains("replayed 6 operations"), after)
        XCTAssert(after.contains("exit-status-1"), after)
    }

    func testAttachToARunningProgramCancelFromTheMonitorAndSeeItEnd() throws {
        let directory = try AttachTests.makeRuntimeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let program = try AttachTests.launch(["demo", "--no-tui", "--listen"], runtimeDirectory: directory)
        defer { if program.process.isRunning { program.process.terminate() } }
        try AttachTests.waitForSocket(in: directory)

        let binary = CommandLineTests.binary.path
        try openShell(width: 130, height: 40, environment: ["XDG_RUNTIME_DIR=\(directory)"])
        try keys("\(binary) attach; echo \"exit\"\"-status-$?\"", "Enter")
        try waitForScreen("the program's rows") { $0.contains("ATTACHED reqtop demo") && $0.contains("w1-profile") }

        // Cancel the download from the monitor: the program itself reports it cancelled.
        try keys("/")
        try cancelTheDownload()
        AttachTests.waitFor("the program's own output to report it") {
            program.stdout().contains(#""op":"w1-download","attempt":1,"event":"cancelled","by":"monitor""#)
        }

        // The program ends: the monitor says so and keeps the last screen until q.
        program.process.terminate()
        program.process.waitUntilExit()
        let ended = try waitForScreen("the monitor to say the program ended") { $0.contains("ENDED: reqtop demo") }
        XCTAssert(ended.contains("w1-download"), ended)
        try keys("q")
        let after = try waitForScreen("the exit status") { $0.range(of: "exit-status-[0-9]", options: .regularExpression) != nil }
        XCTAssert(after.contains("the program ended") && after.contains("exit-status-0"), after)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(directory)/reqtop/\(program.process.processIdentifier).sock"),
                       "the socket is removed when the program ends")
    }

    /// `--insecure` is said where a shared screen shows it, not only on stderr.
    func testTheHeaderSaysWhenTLSIsNotVerified() throws {
        let plan = NSTemporaryDirectory() + "insecure-\(UUID().uuidString.prefix(6)).json"
        try #"{"requests": [{"id": "one", "url": "{{fault}}/delay/20000"}]}"#.write(toFile: plan, atomically: true, encoding: .utf8)
        try tmux(["new-session", "-d", "-s", session, "-x", "150", "-y", "20", CommandLineTests.binary.path, "run", plan, "--insecure"])
        try waitForScreen("the insecure mark") { $0.contains("· nio · INSECURE TLS") && $0.contains("one") }
        try keys("q")
    }

    func testNoTerminalMeansNoMonitor() throws {
        let run = try reqtop(["demo", "--scenario", "quick"])
        XCTAssert(run.stdout.hasPrefix(#"{"event":"session""#), "JSON lines, not a screen, when stdout is a pipe")
        XCTAssertFalse(run.stdout.contains("\u{1B}["), "no terminal escapes in the headless output")
    }
}

extension MonitorEndToEndTests {
    /// Before: once a run's operations had all finished, the header went on counting (the
    /// clock, `req/s`) as if the source were live.
    func testARunThatHasEndedSaysSoAndItsHeaderStandsStill() throws {
        let plan = NSTemporaryDirectory() + "ended-\(UUID().uuidString.prefix(6)).json"
        try Data(#"{"requests": [{"id": "a", "url": "{{fault}}/delay/300"}, {"id": "b", "url": "{{fault}}/echo"}]}"#.utf8)
            .write(to: URL(fileURLWithPath: plan))
        defer { try? FileManager.default.removeItem(atPath: plan) }
        let binary = CommandLineTests.binary.path
        try openShell(width: 120, height: 20)
        try keys("\(binary) run \(plan); echo \"exit\"\"-status-$?\"", "Enter")
        let ended = try waitForScreen("ENDED in the header") { $0.contains("ENDED: every operation finished, q quits") }
        let header = ended.split(separator: "\n").prefix(2).joined(separator: "\n")
        usleep(1_500_000)
        let later = try screen().split(separator: "\n").prefix(2).joined(separator: "\n")
        XCTAssertEqual(later, header, "the clock and the rate stand still")
        // Found by a slow CI run: once the session had ended the screen was idle, and a resize
        // was drawn at the old size and stayed so (the size was read before the resize was).
        try tmux(["resize-window", "-t", session, "-x", "40", "-y", "8"])
        try waitForScreen("too small after the end", timeout: 3) { $0.contains("terminal too small") }
        try tmux(["resize-window", "-t", session, "-x", "120", "-y", "20"])
        try waitForScreen("full size after the end", timeout: 3) { $0.contains("ENDED: every operation finished") && $0.contains("TIMELINE") }
        try keys("q")
        try waitForScreen("the exit") { $0.contains("exit-status-0") }
    }
}

extension MonitorEndToEndTests {
    /// The inspector by hand: the Body tab shows the fault server's JSON answer
    /// pretty-printed, and `y` writes a curl line that real curl runs to the same answer.
    func testTheBodyTabAndCopyAsCurl() throws {
        let plan = NSTemporaryDirectory() + "body-\(UUID().uuidString.prefix(6)).json"
        try Data(#"{"requests": [{"id": "echo", "method": "POST", "url": "{{fault}}/echo?from=monitor", "headers": {"X-Trace": "t-1"}, "body": {"item": 7}}]}"#.utf8)
            .write(to: URL(fileURLWithPath: plan))
        defer { try? FileManager.default.removeItem(atPath: plan) }
        let binary = CommandLineTests.binary.path
        try openShell(width: 160, height: 40)
        try keys("\(binary) run \(plan); echo \"exit\"\"-status-$?\"", "Enter")
        try waitForScreen("the run's end") { $0.contains("ENDED: every operation finished") }
        try keys("Enter")
        try waitForScreen("the detail") { $0.contains("Events") && $0.contains("Body") }
        try keys("Tab", "Tab", "Tab")
        // The whole answer, not only its heading: a capture can land mid-draw.
        let body = try waitForScreen("the Body tab") { $0.contains("response body (attempt 1)") && $0.contains(#""method": "POST","#) }
        XCTAssertTrue(body.contains(#""method": "POST","#), body)
        XCTAssertTrue(body.contains(#""item": 7"#), "the request's body too:\n\(body)")
        try keys("y")
        let copied = try waitForScreen("the copy's answer") { $0.contains("copied echo as curl") }
        let line = try XCTUnwrap(copied.split(separator: "\n").first { $0.contains("copied echo as curl") })
        let path = try XCTUnwrap(line.range(of: #"/\S+\.sh"#, options: .regularExpression).map { String(line[$0]) }, String(line))
        let command = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(command.contains("curl -X POST") || command.contains("curl '"), command)
        XCTAssertTrue(command.contains("-H 'X-Trace: t-1'"), command)
        XCTAssertTrue(command.contains(#"--data-raw '{"item":7}'"#), command)
        // Real curl runs the line, while the fault server still listens, to the same answer.
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") {
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/bin/sh")
            shell.arguments = ["-c", command.replacingOccurrences(of: "curl ", with: "curl -sS ")]
            let out = Pipe()
            shell.standardOutput = out
            try shell.run()
            let answer = out.fileHandleForReading.readDataToEndOfFile()
            shell.waitUntilExit()
            let echoed = try XCTUnwrap(JSONSerialization.jsonObject(with: answer) as? [String: Any])
            XCTAssertEqual(echoed["method"] as? String, "POST")
            XCTAssertEqual((echoed["headers"] as? [String: String])?["x-trace"], "t-1")
            XCTAssertEqual(echoed["body"] as? String, #"{"item":7}"#)
        }
        try keys("q")
        try waitForScreen("the exit") { $0.contains("exit-status-0") }
    }

    /// `e`: the request in the person's editor (here a script that changes a header), sent
    /// again as `echo~edit1`, with the edited header on the wire (the echo shows it); an edit
    /// that breaks the JSON is named by its line and nothing is sent.
    func testEditAndSendAgain() throws {
        let folder = NSTemporaryDirectory() + "edit-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plan = folder + "/plan.json", editor = folder + "/editor.sh", breaker = folder + "/break.sh"
        try Data(#"{"requests": [{"id": "echo", "method": "POST", "url": "{{fault}}/echo", "headers": {"X-Trace": "t-1"}, "body": {"item": 7}}]}"#.utf8)
            .write(to: URL(fileURLWithPath: plan))
        try "#!/bin/sh\nsed -i 's/t-1/t-edited/' \"$1\"\n".write(toFile: editor, atomically: true, encoding: .utf8)
        try "#!/bin/sh\nsed -i 's/\"method\"/method/' \"$1\"\n".write(toFile: breaker, atomically: true, encoding: .utf8)
        for script in [editor, breaker] { chmod(script, 0o755) }
        let binary = CommandLineTests.binary.path
        try openShell(width: 160, height: 40)
        try keys("EDITOR=\(breaker) \(binary) run \(plan); echo \"exit\"\"-status-$?\"", "Enter")
        try waitForScreen("the run's end") { $0.contains("ENDED: every operation finished") }
        try keys("e")
        try waitForScreen("the broken edit named") { $0.contains("not valid JSON") && $0.contains("line 3") }
        try keys("q")
        try waitForScreen("the exit") { $0.contains("exit-status-0") }

        try keys("clear; EDITOR=\(editor) \(binary) run \(plan); echo \"exit\"\"-status-$?\"", "Enter")
        try waitForScreen("the run's end") { $0.contains("ENDED: every operation finished") && !$0.contains("exit-status") }
        try keys("e")
        try waitForScreen("the edit sent") { $0.contains("sent the edited echo as echo~edit1") }
        try waitForScreen("the edited operation's end") { $0.contains("echo~edit1") && $0.contains("ENDED: every operation finished") }
        try keys("G", "Enter")
        try waitForScreen("its detail") { $0.contains("echo~edit1") && $0.contains("Body") }
        try keys("Tab", "Tab", "Tab")
        try waitForScreen("the echo of the edited header") { $0.contains(#""x-trace": "t-edited""#) }
        try keys("q")
        try waitForScreen("the exit") { $0.contains("exit-status-0") }
    }

    /// Provoke a failure: `!` on a host in the Hosts view injects a 503 into every request to
    /// it; the header says FAULTS ON, the host's breaker opens on the injected failures and the
    /// INJECTED column counts them; `Z` clears it.
    func testInjectAFaultFromTheHostsViewAndWatchTheBreakerOpen() throws {
        let binary = CommandLineTests.binary.path
        try openShell(width: 160, height: 40)
        try keys("\(binary) demo; echo \"exit\"\"-status-$?\"", "Enter")
        try waitForScreen("the demo") { $0.contains("w1-profile") }
        try keys("H")
        try waitForScreen("the Hosts view") { $0.contains("INJECTED") }
        try keys("!")
        try waitForScreen("FAULTS ON") { $0.contains("FAULTS ON: injecting status 503 into every request to") }
        let open = try waitForScreen("the breaker opened on injected failures", timeout: 30) { screen in
            screen.split(separator: "\n").contains { $0.contains("open") && $0.range(of: #"\s\d+$"#, options: .regularExpression) != nil }
        }
        XCTAssertTrue(open.split(separator: "\n")[0].contains("FAULTS ON"), open)
        try keys("Z")
        try waitForScreen("cleared") { $0.contains("cleared 1 injected fault") && !$0.split(separator: "\n")[0].contains("FAULTS ON") }
        try keys("q")
        // Quit mid-run: its summary counts what was cancelled and failed (status 1).
        try waitForScreen("the exit") { $0.contains("exit-status-") }
    }

    /// Before: "Error opening terminal: xterm-bogus." and status 1.
    func testAnUnknownTerminalFallsBackToJSONLinesAndSaysWhy() throws {
        let plan = NSTemporaryDirectory() + "term-\(UUID().uuidString.prefix(6)).json"
        try Data(#"{"requests": [{"id": "a", "url": "{{fault}}/echo"}]}"#.utf8).write(to: URL(fileURLWithPath: plan))
        defer { try? FileManager.default.removeItem(atPath: plan) }
        let binary = CommandLineTests.binary.path
        try openShell(width: 200, height: 30)
        try keys("TERM=xterm-bogus \(binary) run \(plan) > /dev/tty; echo \"exit\"\"-status-$?\"", "Enter")
        let screen = try waitForScreen("the fallback") { $0.contains("exit-status-") }
        XCTAssert(screen.contains("reqtop: TERM=xterm-bogus is a terminal ncurses does not know (no terminfo entry); printing events as JSON lines instead"), screen)
        XCTAssert(screen.contains(#""op":"a","attempt":1,"event":"finished""#), screen)
        XCTAssert(screen.contains("exit-status-0"), screen)
    }
}
