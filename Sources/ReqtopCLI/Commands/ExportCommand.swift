import ArgumentParser
import Foundation
import ReqtopApplication
import RequestArchive
import RequestEventFormat
import RequestOperations
import RequestTracing

/// `reqtop export FILE.jsonl --har OUT.har`: a recording as HAR 1.2, for other tools.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Convert a recording to HAR 1.2, or send it to a tracing backend as a trace.",
        discussion: """
        --har: one HAR entry per attempt, with the fields HAR 1.2 requires and timings as it \
        defines them (send, wait, receive; −1 where not applicable). reqtop's own data \
        (operation id, attempt, retry delay and reason, the attempt's events) goes into the \
        _reqtop field of each entry, so `reqtop replay OUT.har` shows the same operations again.

        --otlp: the recording as OpenTelemetry spans at their original times (a `request` span \
        per operation, a CLIENT span per attempt, backoffs and holds as span events), sent to a \
        collector over OTLP/HTTP — the same spans `--otlp` makes live.
        --curl ID: operation ID's request as a curl command line for a POSIX shell, on stdout         (what `y` copies in the monitor); values the recording redacted stay redacted, and a         comment says so.
        --plan ID: the same request as a plan entry (JSON) that `reqtop run` takes inside a         plan's "requests" (what `e` opens in the monitor).
        """
    )

    @Argument(help: "The recording: JSON lines made with --record, or a HAR file.")
    var file: String

    @Option(help: "Where to write the HAR file.")
    var har: String?

    @Option(name: .customLong("otlp"),
            help: ArgumentHelp("Send the recording as a trace to an OpenTelemetry collector over OTLP/HTTP, e.g. http://127.0.0.1:4318.", valueName: "URL"))
    var otlp: String?
    @Option(name: .customLong("curl"), help: ArgumentHelp("Print this operation's request as a curl command line.", valueName: "ID"))
    var curl: String?
    @Option(name: .customLong("plan"), help: ArgumentHelp("Print this operation's request as a plan entry (JSON).", valueName: "ID"))
    var planEntry: String?

    func validate() throws {
        guard har != nil || otlp != nil || curl != nil || planEntry != nil else {
            throw ValidationError("say what to export to: --har OUT.har, --otlp URL, --curl ID, --plan ID")
        }
        if let otlp { _ = try TelemetryOption.baseURL(otlp) }
    }

    func run() throws {
        let (log, shapes) = try read()
        if let curl { try printCurl(log, id: curl) }
        if let planEntry { try printEntry(log, id: planEntry) }
        if let otlp { try sendTrace(log, to: otlp) }
        guard let har else { return }
        do {
            let data = try HARExport.data(events: log.events, startedAt: startedAt(of: log), shapes: shapes)
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

    /// When the recorded session started. A recording whose header does not say (written by
    /// hand or by another tool) is timed from now, and the person is told so.
    private func startedAt(of log: EventLogFile) -> Date {
        if let startedAt = log.startedAt { return startedAt }
        ReqtopMain.printError("reqtop: \(file): the recording does not say when it started (no startedAt in its header): its times are given from now")
        return Date()
    }

    /// The recording, JSON lines or HAR, with a word on what was cut off or skipped; for
    /// another tool's HAR, what its entries hold that events cannot (header order, cookies).
    private func read() throws -> (EventLogFile, [String: HAREntryShape]) {
        do {
            if file.lowercased().hasSuffix(".har") {
                let har = try HARImport.read(path: file, strict: false)
                if !har.skipped.isEmpty {
                    ReqtopMain.printError("reqtop: \(file): \(har.skipped.count) of \(har.skipped.count + har.entryCount) entries skipped")
                }
                har.sayHowRead(file)
                return (EventLogFile(startedAt: har.startedAt, redacted: nil, events: har.events, tornLastLine: nil), har.shapes)
            }
            let log = try EventLogFile.read(path: file)
            if let torn = log.tornLastLine {
                ReqtopMain.printError("reqtop: \(file): line \(torn) is incomplete (the recording was cut off); exporting the events before it")
            }
            return (log, [:])
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
    }

    /// The request of operation `id` as it was last built (a dependent's `built` replaces
    /// its `queued`), with its time limits.
    private func request(_ log: EventLogFile, id: String) throws -> (method: String, url: String, headers: [String: String], body: RecordedBody?,
                                                                       options: RecordedOptions?) {
        var request: (method: String, url: String, headers: [String: String], body: RecordedBody?, options: RecordedOptions?)?
        for event in log.events where event.operationID == id {
            switch event.payload {
            case .queued(let method, let url, let headers, _, let body, let options): request = (method, url, headers, body, options)
            case .built(let method, let url, let headers, let body): request = (method, url, headers, body, request?.options)
            default: break
            }
        }
        guard let request else {
            let known = Array(Set(log.events.map(\.operationID).filter { !$0.isEmpty })).sorted()
            throw InputError(message: "\(file): no operation \"\(id)\" (there are \(known.count): \(known.prefix(8).joined(separator: ", "))\(known.count > 8 ? ", …" : ""))")
        }
        return request
    }

    private func printCurl(_ log: EventLogFile, id: String) throws {
        let request = try request(log, id: id)
        print(CurlCommand.line(method: request.method, url: request.url, headers: request.headers, body: request.body,
                               redacted: log.redacted ?? true, uploadFile: request.options?.bodyFile), terminator: "")
    }

    private func printEntry(_ log: EventLogFile, id: String) throws {
        let request = try request(log, id: id)
        var body: Data?
        switch request.body {
        case .bytes(let data)?:
            guard String(data: data, encoding: .utf8) != nil else { throw InputError(message: "\(id)'s body is binary: a plan entry carries text") }
            body = data
        case .omitted(_, let reason)?:
            throw InputError(message: "\(id)'s body was not recorded (\(reason)): the entry would send none")
        case nil:
            break
        }
        print(RequestEntry(id: id, method: request.method, url: request.url,
                           headers: HostAddress.withoutDerivedHost(request.headers, url: request.url), body: body,
                           timeout: request.options?.attemptTimeout, deadline: request.options?.deadline).json, terminator: "")
    }

    /// Sends the recording's spans and waits until they are sent (or the collector fails).
    private func sendTrace(_ log: EventLogFile, to endpoint: String) throws {
        let attempts = log.events.filter { $0.payload.kind == .taskCreated }.count
        let operations = Set(log.events.map(\.operationID).filter { !$0.isEmpty }).count
        let telemetry: Telemetry
        do {
            telemetry = try Telemetry(endpoint: endpoint, explicit: true, spanQueue: attempts + operations + 16)
        } catch {
            throw InputError(message: "cannot send telemetry to \(endpoint): \(error)")
        }
        guard let tracer = telemetry.instruments.lazy.compactMap({ $0 as? RequestTracer }).first else { return }
        let spans = tracer.send(recording: log.events, startedAt: startedAt(of: log))
        telemetry.finish(timeout: 30)
        ReqtopMain.printError("reqtop: sent \(spans) spans (\(operations) operation\(operations == 1 ? "" : "s"), \(attempts) attempts) to \(endpoint)")
    }
}
