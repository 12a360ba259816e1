import ArgumentParser
import FaultServer
import Foundation
import ReqtopApplication
import RequestArchive
import RequestOperations

/// `reqtop whatif REC --set KEY=VALUE …`: the incident again, with other settings.
struct WhatIfCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "whatif",
        abstract: "Re-run a recording against its upstreams as they answered then, with other settings, and compare.",
        discussion: """
        Starts a fault server that answers each recorded request the way its upstream did \
        (status, headers, body as recorded, latency, closed and reset connections, timeouts), \
        sends the recorded requests again at their recorded start times through the engine \
        with the recorded settings changed by --set (any plan option: retry.maxAttempts=6, \
        budget.percent=0.1, breaker.consecutiveFailures=3, circuitBreaker=false, timeout=2), \
        records the new run, and prints how it compares (as `reqtop diff` does, with its exit \
        status: 0 when no difference is unexplained, 1 when one is). The program's own decisions \
        are replayed as recorded: a reactor's refresh and re-sends, batch holds, backoff delays, \
        early retries, the operations each waited for. Redacted values go to these servers, \
        and only to them, as the placeholder.
        """
    )

    @Argument(help: "The recording (JSON lines, or HAR).")
    var recording: String

    @Option(name: .customLong("set"), help: ArgumentHelp("A plan option to change, as KEY=VALUE (repeat for more).", valueName: "key=value"))
    var sets: [String] = []

    @Option(name: .customLong("record"), help: ArgumentHelp("Where the new run is recorded (JSON lines). Default: beside the recording, NAME.whatif.jsonl.", valueName: "file"))
    var output: String?

    @Flag(name: .customLong("json"), help: "Print the comparison as JSON.")
    var json = false

    @OptionGroup var transport: TransportOption

    func run() throws {
        var settings = try WhatIfSettings(sets)
        let (events, header, recordedOrigins) = try Self.read(recording)
        if let header, let object = (try? JSONSerialization.jsonObject(with: Data(header.utf8))) as? [String: Any] {
            settings.recordedQueue = object
        } else {
            ReqtopMain.printError("reqtop: \(recording) does not say its queue's settings (recorded before they were, or HAR): the plan's defaults stand in")
        }
        let run = WhatIfRun(events: events, settings: settings)
        let upstream = RecordedUpstream.build(events, origin: run.origin)
        guard upstream.attempts > 0 else {
            throw InputError(message: "\(recording): no recorded answers to serve (no attempt that reached an upstream was recorded)")
        }
        RecordedUpstream.sayUnservable(upstream.answers, what: "the re-run")
        // Checked before anything is sent: a wrong --set gets the plan's message now.
        _ = try settings.plan(recorded: run.recorded.values.first?.options)
        let output = self.output ?? Self.defaultOutput(for: recording)
        let carrier = transport.transport ?? .platformDefault
        ReqtopMain.printError("reqtop: re-running \(recording) (\(upstream.attempts) recorded answers) with \(sets.isEmpty ? "its own settings" : sets.joined(separator: " ")); recording to \(output)")
        let (after, skipped, origins) = try run.run(upstream: upstream, transport: try transport.make(carrier), output: output, input: recording,
                                                    recordedOrigins: recordedOrigins)
        for item in skipped { ReqtopMain.printError("reqtop: \(item.id) not sent again: \(item.reason)") }
        // A proxy's tunnels are bytes and its refusals were never sent: not re-run, so not compared.
        let notSent = Resend.rowsNotSent(in: events)
        let compared = notSent.isEmpty ? events : events.filter { !notSent.contains($0.operationID) }
        let diff = RunDiff(a: RunDigest(events: compared, origins: recordedOrigins), b: RunDigest(events: after, origins: origins),
                           notResent: Set(skipped.map(\.id)))
        try diff.print(json: json, files: (recording, output))
        if !diff.isEmpty { throw ExitCode(1) }
    }

    /// The recording's events and its header's settings (HAR has none).
    /// The recording's events, its header's settings (HAR has none), and, for a what-if
    /// run's recording, the upstreams its servers stood for.
    static func read(_ path: String) throws -> ([RequestEvent], String?, [String: String]) {
        guard !path.lowercased().hasSuffix(".har") else { return (try DiffCommand.events(path), nil, [:]) }
        do {
            let file = try EventLogFile.read(path: path)
            if let torn = file.tornLastLine {
                ReqtopMain.printError("reqtop: \(path): line \(torn) is incomplete (the recording was cut off); attempts in flight then have no answer to serve")
            }
            return (file.events, file.settings, file.origins)
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
    }

    /// `incident.jsonl` → `incident.whatif.jsonl`, beside it.
    static func defaultOutput(for recording: String) -> String {
        let url = URL(fileURLWithPath: recording)
        return url.deletingPathExtension().path + ".whatif.jsonl"
    }
}
