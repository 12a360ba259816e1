import Foundation
import ReqtopApplication
import RequestArchive
import RequestEndpoint
import RequestEventFormat
import RequestMonitor
import RequestOperations

/// `reqtop attach --all` and `reqtop attach A B …`: several programs in one monitor.
extension AttachCommand {
    func runMany() throws {
        guard !list else { throw InputError(message: "--list lists every program already; it takes no pids and no --all") }
        // Every named target must be there: a typo is said, not skipped.
        var opened: [(EndpointClient, EndpointClient.Hello)] = []
        if all {
            guard targets.isEmpty else { throw InputError(message: "--all watches every program; give it no pids (or give pids without --all)") }
            try Self.checkFolder()
            for socket in EndpointDirectory.sockets() {
                do {
                    opened.append(try Self.open(socket: socket))
                } catch let error as InputError {
                    // A socket that does not answer (a program that died, one still
                    // starting) is passed over; it is tried again if it comes back.
                    ReqtopMain.printError("reqtop: skipped \(socket.path): \(error.message)")
                }
            }
        } else {
            opened = try targets.map(open(target:))
            // Ids are told apart by pid: two programs with one pid (here and elsewhere) cannot be.
            let pids = opened.map(\.1.pid)
            if let twice = pids.first(where: { pid in pids.filter { $0 == pid }.count > 1 }) {
                opened.forEach { $0.0.close() }
                throw InputError(message: "two of the targets are pid \(twice) (one here, one elsewhere?); attach to them one at a time")
            }
        }
        guard !opened.isEmpty || all else { throw InputError(message: "no program to attach to") }
        if opened.isEmpty {
            ReqtopMain.printError("reqtop: no program answers in \(EndpointDirectory.path) yet; waiting for one (q quits)")
        }
        // The monitor's clock starts where the earliest program's did.
        let now = Date()
        let start = opened.map { now.addingTimeInterval(-$0.1.time) }.min() ?? now
        let recorder = try startRecording(startedAt: start)
        let programs = AttachedPrograms(watchesFolder: all, start: start, recorder: recorder)
        defer { finishRecording(recorder) }
        if case .monitor(let color) = display.mode {
            var options = MonitorScreen.Options(source: "attach", color: color, clock: { programs.now },
                                                playbackStatus: { PlaybackStatus(programs.status) }, faultsActive: { programs.faultsActive })
            // For scripts/fleet-bench.sh: each frame's time, summed up in this file at the end.
            let statsFile = ProcessInfo.processInfo.environment["REQTOP_FRAME_STATS"]
            if statsFile != nil { options.frameTimes = FrameTimes() }
            options.programs = { programs.programLines }
            let screen = try MonitorScreen(options: options, commands: MergedQueueCommands(programs: programs))
            defer {
                if let statsFile, let times = options.frameTimes { try? (times.summary + "\n").write(toFile: statsFile, atomically: true, encoding: .utf8) }
            }
            programs.start(.screen(screen))
            screen.showPaused(opened.contains { $0.1.suspended })
            opened.forEach { programs.adopt($0.0, hello: $0.1) }
            screen.run()
            // Said before the readers stop: a reader stopped by us reads as a program that ended.
            let goodbye = programs.goodbye
            programs.stop()
            ReqtopMain.printError(goodbye)
        } else {
            programs.start(.lines)
            for (_, hello) in opened {
                ReqtopMain.printError("reqtop: attached to \(hello.name) (pid \(hello.pid)): \(hello.live) live operations")
            }
            opened.forEach { programs.adopt($0.0, hello: $0.1) }
            if all {
                // Programs come and go: runs until interrupted (the recording is written as it goes).
                while true { Thread.sleep(forTimeInterval: 3600) }
            }
            programs.waitForAll()
            ReqtopMain.printError("reqtop: every program ended")
        }
    }
}

extension AttachCommand {
    /// `--record FILE`: JSON lines of what the monitor is shown (redacted again on the way in).
    func startRecording(startedAt: Date) throws -> EventLogWriter? {
        guard let record else { return nil }
        guard !record.lowercased().hasSuffix(".har") else {
            throw InputError(message: "--record \(record): attach records JSON lines (.jsonl); make HAR from it with reqtop export FILE --har OUT.har")
        }
        do {
            return try EventLogWriter(path: record, startedAt: startedAt)
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
    }

    func finishRecording(_ recorder: EventLogWriter?) {
        guard let recorder else { return }
        do {
            try recorder.finish()
            ReqtopMain.printError("reqtop: recorded to \(recorder.path) (secrets redacted)")
        } catch {
            ReqtopMain.printError("reqtop: \(recorder.path): the recording is incomplete: \((error as? ArchiveError)?.message ?? "\(error)")")
        }
    }
}
