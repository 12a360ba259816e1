import ArgumentParser
import Foundation
import RequestArchive
import RequestOperations

/// `reqtop export FILE.jsonl --har OUT.har`: a recording as HAR 1.2, for other tools.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Convert a recording to HAR 1.2.",
        discussion: """
        One HAR entry per attempt, with the fields HAR 1.2 requires and timings as it defines \
        them (send, wait, receive; −1 where not applicable). reqtop's own data (operation id, \
        attempt, retry delay and reason, the attempt's events) goes into the _reqtop field of \
        each entry, so `reqtop replay OUT.har` shows the same operations again.
        """
    )

    @Argument(help: "The recording (.jsonl) made with --record.")
    var file: String

    @Option(help: "Where to write the HAR file.")
    var har: String

    func run() throws {
        do {
            let log = try EventLogFile.read(path: file)
            if let torn = log.tornLastLine {
                ReqtopMain.printError("reqtop: \(file): line \(torn) is incomplete (the recording was cut off); exporting the events before it")
            }
            let data = try HARExport.data(events: log.events, startedAt: log.startedAt ?? Date())
            let descriptor = try OutputFile.create(har, notOver: [file])
            defer { close(descriptor) }
            try OutputFile.write(data, to: descriptor, path: har)
            let operations = Set(log.events.map(\.operationID).filter { !$0.isEmpty }).count
            ReqtopMain.printError("reqtop: wrote \(har): \(operations) operation\(operations == 1 ? "" : "s")")
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        } catch {
            throw InputError(message: "\(har): cannot write (\((error as NSError).localizedDescription))")
        }
    }
}
