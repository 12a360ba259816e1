import ArgumentParser
import Foundation
import RequestArchive
import RequestOperations

/// `reqtop replay FILE.jsonl`: what a recorded session did.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay a recording made with --record.",
        discussion: """
        Reads a reqtop event log (JSON lines). Without a terminal, or with --no-tui, prints its \
        events as JSON lines and a summary of the recorded outcomes; the exit status follows \
        them (0 when every operation succeeded). A recording cut off by a crash is read up to \
        its last complete line. HAR files are not read yet.
        """
    )

    @Argument(help: "The recording (.jsonl).")
    var file: String

    @Flag(name: .customLong("no-tui"), help: "Print the events as JSON lines.")
    var noTUI = false

    func validate() throws {
        if file.lowercased().hasSuffix(".har") {
            throw ValidationError("'\(file)': HAR files are not read yet; replay reads reqtop event logs (.jsonl)")
        }
    }

    func run() throws {
        let log: EventLogFile
        do {
            log = try EventLogFile.read(path: file)
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
        if let torn = log.tornLastLine {
            ReqtopMain.printError("reqtop: \(file): line \(torn) is incomplete (the recording was cut off); replaying the \(log.events.count) events before it")
        }
        var out = EventLog.headerLine(startedAt: log.startedAt ?? Date(), redacted: log.redacted) + "\n"
        for event in log.events {
            out += EventLog.line(for: event) + "\n"
        }
        FileHandle.standardOutput.write(Data(out.utf8))
        let summary = ReplaySummary(log.events)
        ReqtopMain.printError(summary.line)
        throw ExitCode(summary.exitStatus)
    }
}

/// The outcomes a recording ends with.
struct ReplaySummary {
    var outcomes: [String: RequestOutcome] = [:]
    var order: [String] = []
    var duration: TimeInterval = 0

    init(_ events: [RequestEvent]) {
        for event in events {
            if outcomes[event.operationID] == nil, !order.contains(event.operationID) { order.append(event.operationID) }
            if case .finished(let outcome, _, _, _, _) = event.payload { outcomes[event.operationID] = outcome }
            duration = max(duration, event.time)
        }
    }

    var exitStatus: Int32 {
        order.allSatisfy { outcomes[$0] == .success } ? 0 : 1
    }

    var line: String {
        let count = { (outcome: RequestOutcome) in self.outcomes.values.filter { $0 == outcome }.count }
        let unfinished = order.count - outcomes.count
        return "reqtop: replayed \(order.count) operation\(order.count == 1 ? "" : "s") over \(String(format: "%.1f", duration))s: "
            + "\(count(.success)) succeeded, \(count(.failure)) failed, \(count(.cancelled)) cancelled"
            + (unfinished > 0 ? ", \(unfinished) unfinished when the recording ends" : "")
    }
}
