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

        let list = RequestList(items: plan.requests.map { planned in
            RequestList.Item(id: planned.id, request: planned.urlRequest(faultServer: faultServerURL),
                             options: RequestOptions(retryPolicy: planned.retry.policy, attemptTimeout: planned.attemptTimeout,
                                                     deadline: planned.deadline))
        })
        let summary = try list.run(on: queue, mode: OutputMode.choose(noTUI: noTUI, noColor: noColor),
                                   source: URL(fileURLWithPath: self.plan).lastPathComponent)
        try RecordingOptions.finish(recorder, hub: queue.events)
        ReqtopMain.printError(summary.line)
        throw ExitCode(summary.exitStatus)
    }
}
