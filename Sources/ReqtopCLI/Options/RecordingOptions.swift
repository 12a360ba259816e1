import ArgumentParser
import Foundation
import ReqtopApplication
import RequestArchive
import RequestEventFormat
import RequestOperations

/// `--record FILE` and `--no-redact`, shared by `demo` and `run`.
struct RecordingOptions: ParsableArguments {
    @Option(name: .customLong("record"), help: "Record the session to FILE: JSON lines as events happen, or HAR 1.2 (at the end) when FILE ends in .har.")
    var file: String?

    @Flag(name: .customLong("no-redact"), help: "Keep secrets (Authorization, Cookie, API keys, token=..., user:password@) in everything reqtop prints, records, shows and serves to attached monitors.")
    var noRedact = false

    /// What takes secrets out of every output (stdout, the recording, the monitor, the
    /// endpoint); nil with --no-redact.
    var redactor: Redactor? { noRedact ? nil : Redactor() }

    /// A recording under way, in either format.
    enum Recorder {
        case lines(EventLogWriter)
        case har(HARRecorder)

        var path: String {
            switch self {
            case .lines(let writer): writer.path
            case .har(let recorder): recorder.path
            }
        }

        var redacted: Bool {
            switch self {
            case .lines(let writer): writer.redacted
            case .har(let recorder): recorder.redacted
            }
        }
    }

    /// Starts recording `hub` when asked to; `nil` otherwise. `inputs` are the files the
    /// command reads, which the recording must not overwrite.
    /// - Parameter insecure: the session's transport verifies no TLS certificate (`--insecure`): the header says so.
    func start(_ hub: EventHub, inputs: [String] = [], settings: QueueSettings? = nil, insecure: Bool = false) throws -> Recorder? {
        guard let file else { return nil }
        do {
            if file.lowercased().hasSuffix(".har") {
                return .har(try HARRecorder(path: file, hub: hub, redact: !noRedact, inputs: inputs))
            }
            return .lines(try EventLogWriter(path: file, hub: hub, redact: !noRedact, inputs: inputs, settings: settings?.json, insecure: insecure))
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
    }

    /// Ends a session: finishes the recording, prints the summary, and exits with the
    /// summary's status — or with 2 when the recording could not be written whole (a full
    /// disk), after the summary, so the run's own story is never lost with it.
    /// - Parameter status: the exit status when the recording was written; the summary's by default.
    static func end(_ recorder: Recorder?, hub: EventHub, summary: RunSummary, status: Int32? = nil) throws -> Never {
        guard let recorder else {
            ReqtopMain.printError(summary.line)
            throw ExitCode(status ?? summary.exitStatus)
        }
        do {
            switch recorder {
            case .lines(let writer): try writer.finish(hub: hub)
            case .har(let har): try har.finish(hub: hub)
            }
        } catch {
            ReqtopMain.printError(summary.line)
            let reason = (error as? ArchiveError)?.message ?? "\(error)"
            throw InputError(message: "\(recorder.path): the recording is incomplete: \(reason)")
        }
        ReqtopMain.printError("reqtop: recorded to \(recorder.path)" + (recorder.redacted ? " (secrets redacted)" : " (not redacted)"))
        ReqtopMain.printError(summary.line)
        throw ExitCode(status ?? summary.exitStatus)
    }
}
