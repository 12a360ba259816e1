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

    func run() throws {
        let plan = try PlanParser.load(path: self.plan)
        _ = OutputMode.choose(noTUI: noTUI)
        let server = plan.usesFaultServer ? try FaultServer.start() : nil
        defer { server?.stop() }

        let queue = RequestQueue(maxConcurrentRequests: plan.maxConcurrent)
        let session = HeadlessSession(queue: queue)
        let summary = session.run {
            for planned in plan.requests {
                let options = RequestOptions(retryPolicy: planned.retry.policy, attemptTimeout: planned.attemptTimeout,
                                             deadline: planned.deadline)
                session.track(queue.add(planned.urlRequest(faultServer: server?.baseURL), id: planned.id, options: options))
            }
        }
        ReqtopMain.printError(summary.line)
        throw ExitCode(summary.exitStatus)
    }
}
