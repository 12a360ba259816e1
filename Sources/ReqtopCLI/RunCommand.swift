import ArgumentParser
import FaultServer
import Foundation
import RequestOperations

/// `reqtop run PLAN.json`: send the requests of a plan file.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the requests of a plan file.",
        discussion: """
        A plan is a JSON object with "requests" (each: "id", "method", "url", optional "headers", \
        "body", "retry", "timeout", "deadline") and optional top-level "retry", "timeout", \
        "deadline" and "maxConcurrent". A URL may start with {{fault}} to target a fault server \
        started in this process. See the README for every field.
        """
    )

    @Argument(help: "The plan file (JSON).")
    var plan: String

    @Flag(name: .customLong("no-tui"), help: "Print events as JSON lines instead of opening the monitor.")
    var noTUI = false

    @Flag(name: .customLong("no-color"), help: "A monochrome monitor (so does a non-empty NO_COLOR).")
    var noColor = false

    @OptionGroup var recording: RecordingOptions

    func run() throws {
        let plan = try PlanParser.load(path: self.plan)
        let server = plan.usesFaultServer ? try FaultServer.start() : nil
        defer { server?.stop() }
        let queue = RequestQueue(maxConcurrentRequests: plan.maxConcurrent)
        let faultServerURL = server?.baseURL
        let recorder = try recording.start(queue.events)

        /// Adds the plan's operations, handing each to `track`.
        @Sendable func addAll(_ track: (RequestOperation) -> Void) {
            for planned in plan.requests {
                let options = RequestOptions(retryPolicy: planned.retry.policy, attemptTimeout: planned.attemptTimeout,
                                             deadline: planned.deadline)
                track(queue.add(planned.urlRequest(faultServer: faultServerURL), id: planned.id, options: options))
            }
        }

        let summary: RunSummary
        if case .monitor(let color) = OutputMode.choose(noTUI: noTUI, noColor: noColor) {
            // The monitor stays on the final state until the person quits.
            let session = try MonitorSession(queue: queue, source: URL(fileURLWithPath: self.plan).lastPathComponent, color: color)
            summary = session.run { addAll(session.track) }
        } else {
            let session = HeadlessSession(queue: queue)
            summary = session.run { addAll(session.track) }
        }
        try RecordingOptions.finish(recorder, hub: queue.events)
        ReqtopMain.printError(summary.line)
        throw ExitCode(summary.exitStatus)
    }
}
