import ArgumentParser
import Foundation
import RequestArchive
import RequestOperations

/// `reqtop diff A B`: two recordings compared, operation by operation and host by host.
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Compare two recordings (JSON lines or HAR): how each operation ended, and what each host was sent.",
        discussion: """
        Per operation: outcome, status, attempts and duration where the two runs differ, and the \
        operations only one run has. Per host: attempts sent upstream, attempts per operation \
        (retry amplification), failures, p50 and p95 time to completion. Ends with one summary \
        line for an incident review. Exit status 0 when the runs ended alike, 1 when they differ.
        """
    )

    @Argument(help: "The first recording.")
    var first: String

    @Argument(help: "The second recording.")
    var second: String

    @Flag(name: .customLong("json"), help: "Print the comparison as JSON.")
    var json = false

    func run() throws {
        let diff = RunDiff(a: RunDigest(events: try Self.events(first)), b: RunDigest(events: try Self.events(second)))
        try diff.print(json: json, files: (first, second))
        if !diff.isEmpty { throw ExitCode(1) }
    }

    static func events(_ path: String) throws -> [RequestEvent] {
        do {
            if path.lowercased().hasSuffix(".har") { return try HARImport.read(path: path, strict: false).events }
            return try EventLogFile.read(path: path).events
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
    }
}
