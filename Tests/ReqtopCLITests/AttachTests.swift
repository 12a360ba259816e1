import Foundation
@testable import ReqtopApplication
@testable import ReqtopCLI
@testable import RequestEndpoint
import RequestMonitor
import RequestOperations
import Synchronization
import XCTest

/// `reqtop attach` headless, and programs with `--listen`, as separate processes.
final class AttachTests: XCTestCase {
    /// A `$XDG_RUNTIME_DIR` of the test's own, so other programs' sockets do not count.
    static func makeRuntimeDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "reqtop-attach-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return path
    }

    struct Launched {
        var process: Process
        var stdoutPath: String
        var stderrPath: String

        func stdout() -> String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
        func stderr() -> String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }
    }

    /// Starts the binary with its output in files (a child that never daemonizes, so
    /// `waitUntilExit` is safe).
    static func launch(_ arguments: [String], runtimeDirectory: String) throws -> Launched {
        let process = Process()
        process.executableURL = CommandLineTests.binary
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = runtimeDirectory
        process.environment = environment
        let base = runtimeDirectory + "/out-\(UUID().uuidString.prefix(6))"
        _ = FileManager.default.createFile(atPath: base + ".out", contents: nil)
        _ = FileManager.default.createFile(atPath: base + ".err", contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: base + ".out")
        process.standardError = FileHandle(forWritingAtPath: base + ".err")
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return Launched(process: process, stdoutPath: base + ".out", stderrPath: base + ".err")
    }

    static func waitForSocket(in directory: String, count: Int = 1) throws {
        waitFor("\(count) endpoint socket(s)") {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory + "/reqtop")) ?? []).filter { $0.hasSuffix(".sock") }.count >= count
        }
    }

    static func waitFor(_ what: String, timeout: TimeInterval = 20, file: StaticString = #filePath, line: UInt = #line, _ condition: () -> Bool) {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if condition() { return }
            usleep(20_000)
        }
        XCTAssertTrue(condition(), "timed out waiting for \(what)", file: file, line: line)
    }

    func testThreeMonitorsAtOnceEachSeeTheWholeRunAndTheEnd() throws {
        let directory = try Self.makeRuntimeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The full demo, ended by SIGTERM once every monitor has seen the cancellation at 5 s:
        // the 3-second quick one could end before three monitors had started on a busy machine.
        let program = try Self.launch(["demo", "--no-tui", "--listen"], runtimeDirectory: directory)
        try Self.waitForSocket(in: directory)
        // The socket exists a moment before the line that names it is written.
        Self.waitFor("the endpoint's line on stderr") {
            program.stderr().contains("monitor endpoint at \(directory)/reqtop/\(program.process.processIdentifier).sock")
        }
        let monitors = try (1...3).map { _ in try Self.launch(["attach", "--no-tui"], runtimeDirectory: directory) }
        for monitor in monitors {
            Self.waitFor("every monitor to see w1-hanging cancelled") { monitor.stdout().contains(#""op":"w1-hanging","attempt":1,"event":"finished""#) }
        }
        program.process.terminate()
        program.process.waitUntilExit()
        for monitor in monitors {
            monitor.process.waitUntilExit()
            XCTAssertEqual(monitor.process.terminationStatus, 0, monitor.stderr())
            XCTAssertTrue(monitor.stderr().contains("attached to reqtop demo (pid \(program.process.processIdentifier))"), monitor.stderr())
            XCTAssertTrue(monitor.stderr().contains("ended"), monitor.stderr())
            // A late monitor gets what happened before it through the snapshot.
            for id in ["w1-profile", "w1-flaky", "w1-hanging", "w1-exhausted"] {
                XCTAssertTrue(monitor.stdout().contains(#""op":"\#(id)","attempt":"#) && monitor.stdout().contains(#""op":"\#(id)""#),
                              "\(id) in \(monitor.stdout().prefix(300))")
            }
            XCTAssertTrue(monitor.stdout().contains(#""op":"w1-hanging","attempt":1,"event":"finished","outcome":"cancelled""#))
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: "\(directory)/reqtop/\(program.process.processIdentifier).sock"))
    }

    func testAttachSaysWhatIsWrongWhenThereIsNothingOrTooMuchToAttachTo() throws {
        let directory = try Self.makeRuntimeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var none = try Self.launch(["attach", "--no-tui"], runtimeDirectory: directory)
        none.process.waitUntilExit()
        XCTAssertEqual(none.process.terminationStatus, 2)
        XCTAssertTrue(none.stderr().contains("no program to attach to"), none.stderr())

        none = try Self.launch(["attach", "999999", "--no-tui"], runtimeDirectory: directory)
        none.process.waitUntilExit()
        XCTAssertEqual(none.process.terminationStatus, 2)
        XCTAssertTrue(none.stderr().contains("no monitor endpoint for pid 999999"), none.stderr())

        none = try Self.launch(["attach", "/etc/hostname", "--no-tui"], runtimeDirectory: directory)
        none.process.waitUntilExit()
        XCTAssertEqual(none.process.terminationStatus, 2)
        XCTAssertTrue(none.stderr().contains("/etc/hostname is not a socket"), none.stderr())

        none = try Self.launch(["demo", "--read-only"], runtimeDirectory: directory)
        none.process.waitUntilExit()
        XCTAssertEqual(none.process.terminationStatus, 2)
        XCTAssertTrue(none.stderr().contains("--read-only needs --listen"), none.stderr())

        let programs = try (1...2).map { _ in try Self.launch(["demo", "--no-tui", "--listen"], runtimeDirectory: directory) }
        defer { programs.forEach { $0.process.terminate() } }
        try Self.waitForSocket(in: directory, count: 2)
        let both = try Self.launch(["attach"], runtimeDirectory: directory)
        both.process.waitUntilExit()
        XCTAssertEqual(both.process.terminationStatus, 2)
        XCTAssertTrue(both.stderr().contains("2 programs can be attached to; pick one (reqtop attach PID)"), both.stderr())
        for program in programs {
            let row = both.stdout().split(separator: "\n").first { $0.hasPrefix("\(program.process.processIdentifier) ") }
            XCTAssertTrue(row?.contains("reqtop demo") == true, both.stdout())
        }
        let listed = try Self.launch(["attach", "--list"], runtimeDirectory: directory)
        listed.process.waitUntilExit()
        XCTAssertEqual(listed.process.terminationStatus, 0)
        XCTAssertTrue(listed.stdout().hasPrefix("PID     NAME"), listed.stdout())
    }

    func testARefusedPauseIsUndoneInTheMonitor() throws {
        let directory = try Self.makeRuntimeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try queue.startMonitorEndpoint(options: .init(readOnly: true, directory: directory))
        defer { endpoint.stop() }
        let client = try EndpointClient.connect(path: endpoint.path)
        Thread { client.run { _ in } }.start()
        let commands = RemoteQueueCommands(connection: ConnectionBox(client))
        let pause = commands.perform(.queue(.setSuspended(true)))
        XCTAssertEqual(pause, CommandAnswer(ok: false, "refused: this endpoint is read-only"))
        var state = MonitorState()
        let context = MonitorUpdate.Context(visible: [], pageSize: 10, model: QueueModel(source: "attach"), canCommand: true, canCancel: true)
        XCTAssertEqual(MonitorUpdate.update(&state, .togglePause, context), [.command(.queue(.setSuspended(true)))])
        XCTAssertTrue(state.paused)
        _ = MonitorUpdate.update(&state, .answered(.queue(.setSuspended(true)), pause), context)
        XCTAssertFalse(state.paused, "the monitor shows the queue running again")
        XCTAssertEqual(commands.perform(.queue(.cancel(operation: "x"))).message, "refused: this endpoint is read-only")
        XCTAssertFalse(queue.isSuspended)
    }
}

/// A socket that says one line to whoever connects and closes: what an endpoint says to a
/// peer it refuses, or garbage.
private final class OneLineSocket: @unchecked Sendable {
    // @unchecked: the descriptor and path are set once in init and only read after.
    let path: String
    private let fd: Int32

    /// `line` nil: closes at once, saying nothing.
    init(saying line: String?) throws {
        let path = NSTemporaryDirectory() + "one-\(UUID().uuidString.prefix(8)).sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        self.path = path
        self.fd = fd
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(fd, 4) == 0 else { throw POSIXError(.EADDRINUSE) }
        Thread.detachNewThread {
            let peer = accept(fd, nil, nil)
            guard peer >= 0 else { return }
            guard let line else {
                close(peer)
                return
            }
            let bytes = Array((line + "\n").utf8)
            _ = bytes.withUnsafeBytes { write(peer, $0.baseAddress, $0.count) }
            close(peer)
        }
    }

    deinit {
        close(fd)
        unlink(path)
    }
}

extension AttachTests {
    /// Before: a refused attach printed "the program ended" and exited 0.
    func testARefusedAttachIsAnErrorThatSaysWhy() throws {
        let refusing = try OneLineSocket(saying: EndpointProtocol.error("refused: this endpoint accepts only its own user (uid 1000)"))
        let run = try reqtop(["attach", refusing.path, "--no-tui"], timeout: 20)
        XCTAssertEqual(run.status, 2)
        XCTAssertEqual(run.stderr, "reqtop: cannot attach to \(refusing.path): the program says: refused: this endpoint accepts only its own user (uid 1000)\n")
        let garbage = try OneLineSocket(saying: "HTTP/1.1 400 Bad Request")
        let confused = try reqtop(["attach", garbage.path, "--no-tui"], timeout: 20)
        XCTAssertEqual(confused.status, 2)
        XCTAssertEqual(confused.stderr, "reqtop: cannot attach to \(garbage.path): its first line is no hello (\"HTTP/1.1 400 Bad Request\"); is it a reqtop endpoint?\n")
    }

    /// Before: a peer that closed at once was "no hello within 5 s" after 0.0 s, and a hello
    /// of protocol version 2 was taken silently.
    /// `--all` and its watch of the folder open a socket the same way: one named for a pid
    /// whose program says it is another is refused, with both pids said.
    func testASocketWhoseProgramSaysAnotherPidIsRefused() throws {
        let hello = #"{"event":"hello","version":1,"pid":4242,"name":"x","startedAt":"","t":0,"live":0}"#
        let other = try OneLineSocket(saying: hello)
        XCTAssertThrowsError(try AttachCommand.open(socket: (pid: 77, path: other.path))) { error in
            XCTAssertEqual((error as? InputError)?.message, "cannot attach to \(other.path): the program there says it is pid 4242, not 77")
        }
        let same = try OneLineSocket(saying: hello)
        let (client, greeting) = try AttachCommand.open(socket: (pid: 4242, path: same.path))
        client.close()
        XCTAssertEqual(greeting.pid, 4242)
    }

    func testAPeerThatClosesOrSpeaksAnotherVersionIsNamedSo() throws {
        let closing = try OneLineSocket(saying: nil)
        let closed = try reqtop(["attach", closing.path, "--no-tui"], timeout: 20)
        XCTAssertEqual(closed.status, 2)
        XCTAssertEqual(closed.stderr, "reqtop: cannot attach to \(closing.path): it closed the connection without a hello (is it a reqtop endpoint?)\n")
        let newer = try OneLineSocket(saying: #"{"event":"hello","version":2,"pid":1,"name":"x","startedAt":"","t":0,"live":0}"#)
        let refused = try reqtop(["attach", newer.path, "--no-tui"], timeout: 20)
        XCTAssertEqual(refused.status, 2)
        XCTAssert(refused.stderr.contains("the program speaks endpoint protocol version 2; this reqtop speaks version 1"), refused.stderr)
    }
}

extension AttachTests {
    /// Before: in about half the runs a headless attach stopped at an operation's
    /// `taskCreated`, said "ended" and exited 0: the endpoint dropped the events still in its
    /// 25 ms batch and closed connections with bytes unwritten. Fifty runs of a short plan
    /// whose last request starts at the very end; each attached stream must hold every event
    /// of the program's own output, in the same order for each operation.
    func testAnAttachedMonitorGetsEveryEventBeforeTheEndFiftyTimesInARow() throws {
        let directory = try Self.makeRuntimeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let plan = directory + "/short.json"
        try Data("""
        {"retry": {"baseDelay": 0.05, "jitter": "none"},
         "requests": [
           {"id": "slow", "url": "{{fault}}/delay/300"},
           {"id": "flaky", "url": "{{fault}}/flaky/f?failures=1"},
           {"id": "last", "url": "{{fault}}/echo", "dependsOn": "slow"}
         ]}
        """.utf8).write(to: URL(fileURLWithPath: plan))
        /// Each operation's events, in order, as JSON lines without the time (the snapshot
        /// and the live stream write the same events).
        func byOperation(_ output: String) -> [String: [String]] {
            var events: [String: [String]] = [:]
            for line in output.split(separator: "\n") {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      let op = object["op"] as? String else { continue }
                events[op, default: []].append("\(object["attempt"] ?? "")-\(object["event"] ?? "")")
            }
            return events
        }
        var failures: [String] = []
        for round in 0..<50 {
            let runtime = directory + "/r\(round)"
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let program = try Self.launch(["run", plan, "--no-tui", "--listen"], runtimeDirectory: runtime)
            try Self.waitForSocket(in: runtime)
            let monitor = try Self.launch(["attach", "--no-tui"], runtimeDirectory: runtime)
            program.process.waitUntilExit()
            monitor.process.waitUntilExit()
            let own = byOperation(program.stdout())
            let attached = byOperation(monitor.stdout())
            XCTAssertEqual(own["last"]?.last, "1-finished", "the program's own output is whole: \(program.stderr())")
            if monitor.stderr().contains("attached to") && attached != own {
                failures.append("round \(round): attached \(attached), own \(own); \(monitor.stderr())")
            }
            XCTAssertEqual(monitor.process.terminationStatus, 0, monitor.stderr())
        }
        XCTAssertEqual(failures, [], "\(failures.count) of 50 attached streams lost events")
    }
}

/// `attach A B --record`: the merged stream as a recording, each event with its program,
/// read back by Python's json and replayed as it was shown.
final class MergedRecordingTests: XCTestCase {
    func testARecordingOfTwoProgramsKeepsEachEventsProgram() throws {
        let directory = try AttachTests.makeRuntimeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let programs = try (1...2).map { _ in try AttachTests.launch(["demo", "--no-tui", "--listen", "--scenario", "quick"], runtimeDirectory: directory) }
        defer { programs.forEach { if $0.process.isRunning { $0.process.terminate() } } }
        try AttachTests.waitForSocket(in: directory, count: 2)
        let pids = programs.map { $0.process.processIdentifier }
        let file = directory + "/merged.jsonl"
        let monitor = try AttachTests.launch(["attach"] + pids.map(String.init) + ["--no-tui", "--record", file], runtimeDirectory: directory)
        monitor.process.waitUntilExit()
        XCTAssertEqual(monitor.process.terminationStatus, 0, monitor.stderr())
        XCTAssert(monitor.stderr().contains("every program ended") && monitor.stderr().contains("recorded to \(file)"), monitor.stderr())

        // Python's json reads every line; each event names its program, and its id starts with the pid.
        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        check.arguments = ["-c", """
            import json, sys
            lines = [json.loads(l) for l in open(sys.argv[1])]
            assert lines[0]["event"] == "session", lines[0]
            events = lines[1:]
            programs = {e["program"] for e in events}
            for e in events:
                if e["op"]:
                    pid = e["op"].split("/", 1)[0]
                    assert e["program"].endswith(" " + pid), e
            print(len(events), sorted(programs))
            """, file]
        let out = Pipe()
        check.standardOutput = out
        try check.run()
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        check.waitUntilExit()
        XCTAssertEqual(check.terminationStatus, 0, said)
        for pid in pids { XCTAssert(said.contains("reqtop demo \(pid)"), said) }

        // Replayed, it is the same picture: both programs' rows, by their prefixed ids.
        let replay = try AttachTests.launch(["replay", file, "--no-tui"], runtimeDirectory: directory)
        replay.process.waitUntilExit()
        for pid in pids { XCTAssert(replay.stdout().contains("\"op\":\"\(pid)/w1-"), String(replay.stdout().prefix(400))) }
    }
}

/// A recording of an attached program takes each event once: the snapshot sent after the
/// reader fell behind, or first on a reconnection, repeats what was recorded.
final class SnapshotRepeatTests: XCTestCase {
    func testAResyncsSnapshotIsNotRecordedAgainUntilItsEnd() {
        var snapshots = SnapshotRepeat()
        XCTAssertTrue(snapshots.recordsEvents, "a first attach records the snapshot: it is new to the recording")
        snapshots.note(.missed(12))
        snapshots.note(.snapshot(operations: 3))
        XCTAssertFalse(snapshots.recordsEvents, "the fresh snapshot repeats what was recorded")
        snapshots.note(.event(RequestEvent(time: 1, operationID: "a", attempt: 1, payload: .started)))
        XCTAssertFalse(snapshots.recordsEvents)
        snapshots.note(.snapshotEnd)
        XCTAssertTrue(snapshots.recordsEvents, "events after the snapshot's end are new")
        snapshots.note(.suspended(true))
        XCTAssertTrue(snapshots.recordsEvents)
    }

    func testAReconnectionsFirstSnapshotIsARepeat() {
        var snapshots = SnapshotRepeat(repeating: true)
        snapshots.note(.reply(id: 1, ok: true, message: "ok"))
        XCTAssertFalse(snapshots.recordsEvents)
        snapshots.note(.snapshotEnd)
        XCTAssertTrue(snapshots.recordsEvents)
    }
}
