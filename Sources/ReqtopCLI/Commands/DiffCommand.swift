import ArgumentParser
import Foundation
import ReqtopApplication
import RequestArchive
import RequestOperations

/// `reqtop diff A B`: two recordings compared, operation by operation and host by host.
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Compare two recordings (JSON lines or HAR): how each operation ended, and what each host was sent.",
        discussion: """
        Per operation: outcome, status, attempts and duration where the two runs differ, and the \
        operations only one run has, each with its cause where one explains it (timing within \
        0.25 s or 20 %, redacted, order). Per upstream (a what-if run's servers counted as the \
        hosts they stood for): attempts sent, attempts per operation (retry amplification), \
        failures, p50 and p95 time to completion. Ends with one summary line that counts the \
        unexplained differences. Exit status 0 when there are none, 1 when there are.
        """
    )

    @Argument(help: "The first recording.")
    var first: String

    @Argument(help: "The second recording.")
    var second: String

    @Flag(name: .customLong("json"), help: "Print the comparison as JSON.")
    var json = false

    func run() throws {
        let (a, b) = (try Self.recording(first), try Self.recording(second))
        let diff = RunDiff(a: RunDigest(events: a.events, origins: a.origins), b: RunDigest(events: b.events, origins: b.origins))
        try diff.print(json: json, files: (first, second))
        if !diff.isEmpty { throw ExitCode(1) }
    }

    static func events(_ path: String) throws -> [RequestEvent] {
        try recording(path).events
    }

    /// A recording's events, and the upstreams a what-if run's servers stood for (none in a HAR).
    static func recording(_ path: String) throws -> (events: [RequestEvent], origins: [String: String]) {
        do {
            if path.lowercased().hasSuffix(".har") {
                let har = try HARImport.read(path: path, strict: false)
                har.sayHowRead(path)
                return (har.events, [:])
            }
            let file = try EventLogFile.read(path: path)
            return (file.events, file.origins)
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
    }
}
