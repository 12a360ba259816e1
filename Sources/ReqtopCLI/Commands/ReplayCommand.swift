import Foundation
import ReqtopApplication
import ArgumentParser
import RequestArchive
import RequestEventFormat
import RequestMonitor
import RequestOperations
import Synchronization

/// `reqtop replay FILE.jsonl`: what a recorded session did.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay a recording made with --record.",
        discussion: """
        Reads a reqtop event log (JSON lines). In a terminal it plays the recording in the \
        monitor on its original timeline: p or Space pauses, + and - change the speed (0.25× to \
        16×), n steps to the next event, < and > jump to the start and the end; q quits. \
        Without a terminal, or with --no-tui, it prints the events as JSON lines. Either way a \
        summary of the recorded outcomes goes to stderr and the exit status follows them (0 when \
        every operation succeeded). A recording cut off by a crash is read up to its last \
        complete line. With --send the recorded requests are sent again instead (methods, \
        URLs, headers, bodies, time limits and retry settings); a request that needs a redacted \
        value or a body the recording left out is reported and not sent. A .har file (HAR 1.2, from browsers, proxies or reqtop itself) is shown \
        entry by entry on its timeline.
        """
    )

    @Argument(help: "The recording: a reqtop event log (.jsonl) or a HAR file (.har).")
    var file: String

    @OptionGroup var display: DisplayOptions

    @Option(parsing: .unconditional, help: "Playback speed in the monitor, from 0.25 to 16 (+ and - then step through 0.25, 0.5, 1, 2, 4, 8, 16).")
    var speed = 1.0

    @Flag(help: "Send the recorded requests again, through the engine (retries and all), instead of showing the recording.")
    var send = false

    @Option(help: "With --send: the scheme, host and port to send to instead of the recorded ones (http://127.0.0.1:8080); a path in it goes in front of each recorded path (http://127.0.0.1:8080/staging).")
    var target: String?

    @Flag(help: "With --send and no --target: send without asking which hosts are fine.")
    var yes = false

    @OptionGroup var transport: TransportOption

    @OptionGroup var telemetry: TelemetryOption

    @Flag(help: "A HAR entry that cannot be read is an error (exit 2); without it such entries are skipped, named, and the exit status is 1.")
    var strict = false

    @Option(name: .customLong("against"), help: ArgumentHelp("A second recording (a what-if run, another day) shown on the same time axis: each of its operations as ID@NAME under the first's.", valueName: "recording"))
    var against: String?

    func validate() throws {
        if against != nil, send {
            throw ValidationError("--against shows two runs; --send sends one: use them apart")
        }
        if target != nil || yes || transport.transport != nil, !send {
            throw ValidationError("--target, --yes and --transport go with --send")
        }
        if let target {
            guard let url = URL(string: target), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host != nil else {
                throw ValidationError("--target '\(target)' is not an absolute http or https URL (for example http://127.0.0.1:8080)")
            }
        }
        if telemetry.otlp != nil, !send {
            throw ValidationError("--otlp traces what --send sends; to send a recording itself as a trace: reqtop export \(file) --otlp URL")
        }
        guard ReplayPlayer.speedRange.contains(speed) else {
            throw ValidationError("--speed must be from 0.25 to 16, not \(speed)")
        }
    }

    private var isHAR: Bool { file.lowercased().hasSuffix(".har") || file.lowercased().hasSuffix(".harp") }

    func run() throws {
        if let against { try playTwoRuns(against) }
        if !isHAR, !send {
            let mode = display.mode
            if mode == .headless { try printStreaming() }
            // A pipe cannot be read again from its start (going back needs that): read whole, below.
            if case .monitor(let color) = mode, (try? InputFile.kind(of: file)) == S_IFREG {
                try playStreaming(color: color)
            }
        }
        let log: EventLogFile
        var skippedEntries = 0
        do {
            if isHAR {
                let har = try HARImport.read(path: file, strict: strict)
                for reason in har.skipped { ReqtopMain.printError("reqtop: \(file): skipped \(reason)") }
                har.sayHowRead(file)
                if !har.skipped.isEmpty {
                    ReqtopMain.printError("reqtop: \(file): \(har.skipped.count) of \(har.skipped.count + har.entryCount) entries skipped (--strict refuses the file instead)")
                }
                skippedEntries = har.skipped.count
                if har.torn {
                    ReqtopMain.printError("reqtop: \(file): the recording was cut off; replaying the \(har.entryCount) whole entries before the cut")
                } else if har.endedCleanly == false {
                    ReqtopMain.printError("reqtop: \(file): the recording did not end cleanly (the process was stopped before it closed it): "
                        + "operations still in flight then are not in it; replaying its \(har.entryCount) entries")
                }
                // Not the whole story: never a clean 0.
                if har.endedCleanly == false { skippedEntries = max(skippedEntries, 1) }
                log = EventLogFile(startedAt: har.startedAt, redacted: nil, events: har.events, tornLastLine: nil)
            } else {
                log = try EventLogFile.read(path: file)
            }
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
        if let torn = log.tornLastLine {
            ReqtopMain.printError("reqtop: \(file): line \(torn) is incomplete (the recording was cut off); replaying the \(log.events.count) events before it")
        }
        if send {
            try resend(log)
        }
        let summary = ReplaySummary(log.events)
        if case .monitor(let color) = display.mode {
            try playInMonitor(log, color: color)
            ReqtopMain.printError(summary.line)
            throw ExitCode(skippedEntries > 0 ? max(1, summary.exitStatus) : summary.exitStatus)
        }
        printHeader(startedAt: log.startedAt, redacted: log.redacted)
        printLines(log.events)
        ReqtopMain.printError(summary.line)
        // Something was left out: not the whole story, so not a clean 0.
        throw ExitCode(skippedEntries > 0 ? max(1, summary.exitStatus) : summary.exitStatus)
    }

    private func printHeader(startedAt: Date?, redacted: Bool?) {
        FileHandle.standardOutput.write(Data((EventLog.headerLine(startedAt: startedAt, redacted: redacted) + "\n").utf8))
    }

    /// Events as JSON lines on stdout, in one write.
    private func printLines(_ events: [RequestEvent]) {
        var out = ""
        out.reserveCapacity(events.count * 96)
        for event in events {
            out += EventLog.line(for: event)
            out += "\n"
        }
        FileHandle.standardOutput.write(Data(out.utf8))
    }

    /// A recording whose writer was killed: say where it stops.
    private func reportTorn(_ line: Int?) {
        guard let line else { return }
        ReqtopMain.printError("reqtop: \(file): line \(line) is incomplete (the recording was cut off); replayed the events before it")
    }

    /// A recording printed as JSON lines while it is read, a piece at a time: memory stays
    /// that of one piece and the tally, whatever the size of the file.
    private func printStreaming() throws -> Never {
        var tally = SessionTally()
        let stream: EventLogStream
        do {
            stream = try EventLogStream(path: file)
            printHeader(startedAt: stream.startedAt, redacted: stream.redacted)
            while let events = try stream.next() {
                printLines(events)
                tally.add(events)
            }
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
        reportTorn(stream.tornLastLine)
        let summary = ReplaySummary(tally: tally)
        ReqtopMain.printError(summary.line)
        throw ExitCode(summary.exitStatus)
    }

    /// Sends the recorded requests again through the engine; ends the process with the run's status.
    private func resend(_ log: EventLogFile) throws -> Never {
        let plan = Resend(events: log.events, target: target.flatMap(URL.init(string:)))
        for skipped in plan.skipped {
            ReqtopMain.printError("reqtop: not sending \(skipped.id): \(skipped.reason)")
        }
        for note in plan.notes {
            ReqtopMain.printError("reqtop: \(note)")
        }
        guard !plan.requests.isEmpty else {
            ReqtopMain.printError("reqtop: \(file): nothing to send")
            throw ExitCode(plan.skipped.isEmpty ? 0 : 1)
        }
        if target == nil, !yes {
            ReqtopMain.printError("reqtop: \(plan.requests.count) request\(plan.requests.count == 1 ? "" : "s") would go to: \(plan.hosts.joined(separator: ", "))")
            guard isatty(STDIN_FILENO) == 1 else {
                throw InputError(message: "not sending without a confirmation: pass --yes, or --target URL to send elsewhere")
            }
            FileHandle.standardError.write(Data("Send them? [y/N] ".utf8))
            guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else {
                ReqtopMain.printError("reqtop: nothing sent")
                throw ExitCode(1)
            }
        }
        let list = RequestList(items: plan.requests.map { RequestList.Item(id: $0.id, request: $0.request, options: $0.options) })
        let carrier = transport.transport ?? .platformDefault
        let exporters = try telemetry.start()
        defer { exporters?.finish() }
        let summary = try list.run(on: RequestQueue(transport: try transport.make(carrier), instruments: exporters?.instruments ?? []), mode: display.mode,
                                   source: "re-sending \(URL(fileURLWithPath: file).lastPathComponent) · \(transport.label(carrier))", redactor: Redactor())
        ReqtopMain.printError(summary.line + (plan.skipped.isEmpty ? "" : "; \(plan.skipped.count) not sent"))
        throw ExitCode(plan.skipped.isEmpty ? summary.exitStatus : 1)
    }

    /// A recording in the monitor while it is read: the first screen comes at once, whatever
    /// the size of the file; the summary counts what was read before `q`.
    private func playStreaming(color: Bool) throws -> Never {
        do {
            // The header is checked before the screen opens: a file that is not a recording
            // is said plainly, exit 2.
            try EventLogStream(path: file).close()
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
        let source = StreamingReplaySource(path: file)
        try playInMonitor(source, color: color)
        source.stop()
        let outcome = source.outcome
        if let error = outcome.error {
            ReqtopMain.printError(ReplaySummary(tally: outcome.tally).line + " (up to the bad line)")
            throw InputError(message: error.description)
        }
        reportTorn(outcome.tornLastLine)
        if !outcome.reachedEnd {
            ReqtopMain.printError("reqtop: \(file): quit before the whole recording was read; the summary counts what was read")
        }
        let summary = ReplaySummary(tally: outcome.tally)
        ReqtopMain.printError(summary.line)
        throw ExitCode(summary.exitStatus)
    }

    /// Two recordings on one time axis: the second's operations under the first's.
    private func playTwoRuns(_ second: String) throws -> Never {
        let name = URL(fileURLWithPath: second).deletingPathExtension().lastPathComponent
        let merged = TwoRuns.merge(try DiffCommand.events(file), try DiffCommand.events(second), name: name)
        let summary = ReplaySummary(merged)
        if case .monitor(let color) = display.mode {
            try playInMonitor(ReplayEvents(merged), color: color)
        } else {
            printHeader(startedAt: nil, redacted: nil)
            printLines(merged)
        }
        ReqtopMain.printError(summary.line + " (both runs: \(URL(fileURLWithPath: file).lastPathComponent) and, as ID@\(name), \(URL(fileURLWithPath: second).lastPathComponent))")
        throw ExitCode(summary.exitStatus)
    }

    /// The recording through the same model and view as a live run, on its timeline.
    private func playInMonitor(_ log: EventLogFile, color: Bool) throws {
        try playInMonitor(ReplayEvents(log.events), color: color)
    }

    private func playInMonitor(_ source: ReplaySource, color: Bool) throws {
        let screenBox = ScreenBox()
        let player = ReplayPlayer(source: source, speed: speed) { output in
            switch output {
            case .events(let events):
                screenBox.screen?.feed(events)
                // A jump to the end of a large file reads faster than the screen takes events
                // in: wait for it rather than pile them up (957 MB at the end of a 1 GB file).
                while let screen = screenBox.screen, screen.backlog > 100_000 { usleep(2_000) }
            case .reset: screenBox.screen?.reset()
            }
        }
        let commands = ReplayCommands(player: player)
        let screen = try MonitorScreen(options: .init(source: "replay \(URL(fileURLWithPath: file).lastPathComponent)", color: color,
                                                      clock: { player.playhead }, playbackStatus: { commands.status() }),
                                       commands: commands)
        screenBox.screen = screen
        player.start()
        screen.run()
        player.stop()
    }
}

/// Lets the player's output closure reach the screen, which is made after the player
/// (the screen's clock and commands need the player).
private final class ScreenBox: Sendable {
    private let stored = Mutex<MonitorScreen?>(nil)

    var screen: MonitorScreen? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}

/// The outcomes a recording ends with.
struct ReplaySummary {
    let tally: SessionTally

    init(_ events: [RequestEvent]) {
        tally = SessionTally(events)
    }

    init(tally: SessionTally) {
        self.tally = tally
    }

    /// 0 when every operation succeeded or was relayed (a transparent proxy's answers).
    var exitStatus: Int32 {
        tally.operations == tally.count(.success) + tally.count(.relayed) ? 0 : 1
    }

    var line: String {
        let total = tally.operations
        let unfinished = tally.unfinished
        return "reqtop: replayed \(total) operation\(total == 1 ? "" : "s") over \(String(format: "%.1f", tally.latest))s: "
            + "\(tally.count(.success)) succeeded, "
            + RunSummary.relayedWords(tally.count(.relayed))
            + "\(tally.count(.failure)) failed, \(tally.count(.cancelled)) cancelled"
            + " (\(tally.attempts) attempt\(tally.attempts == 1 ? "" : "s"))"
            + (unfinished > 0 ? ", \(unfinished) unfinished when the recording ends" : "")
    }
}
