import ArgumentParser
import Foundation
import RequestArchive
import RequestOperations

/// `--record FILE` and `--no-redact`, shared by `demo` and `run`.
struct RecordingOptions: ParsableArguments {
    @Option(name: .customLong("record"), help: "Record the session's events to FILE (JSON lines, as they happen).")
    var file: String?

    @Flag(name: .customLong("no-redact"), help: "Keep secrets (Authorization, Cookie, token=...) in the recording.")
    var noRedact = false

    func validate() throws {
        if let file, file.lowercased().hasSuffix(".har") {
            throw ValidationError("--record writes reqtop event logs (.jsonl); HAR output is not available yet")
        }
    }

    /// Starts recording `hub` when asked to; `nil` otherwise.
    func start(_ hub: EventHub) throws -> EventLogWriter? {
        guard let file else { return nil }
        do {
            return try EventLogWriter(path: file, hub: hub, redact: !noRedact)
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
    }

    /// Ends a recording and says where it went (on stderr, with the summary).
    static func finish(_ writer: EventLogWriter?, hub: EventHub) throws {
        guard let writer else { return }
        do {
            try writer.finish(hub: hub)
        } catch {
            throw InputError(message: "\(error)")
        }
        ReqtopMain.printError("reqtop: recorded to \(writer.path)" + (writer.redacted ? " (secrets redacted)" : " (not redacted)"))
    }
}
