import ArgumentParser
import Foundation
import RequestOperations

/// `reqtop demo`: the built-in flow on in-process fault servers.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the built-in demo flow against fault servers started in this process.",
        discussion: """
        Nothing to set up: the demo starts its own HTTP servers on 127.0.0.1 (free ports) and \
        sends requests that show retries with backoff, Retry-After, early retry, a slow download, \
        redirects, dropped and reset connections, a cancellation and exhausted retries.

        Scenarios: default (about 20 seconds), quick (about 3 seconds).

        Some demo requests fail on purpose, so the demo exits with status 1.
        """
    )

    @Option(help: "The scenario to run: \(DemoScenario.names.joined(separator: ", ")).")
    var scenario = "default"

    @Flag(name: .customLong("no-tui"), help: "Print events as JSON lines instead of opening the monitor.")
    var noTUI = false

    @Option(help: "Requests in flight at once.")
    var maxConcurrent = 6

    func validate() throws {
        guard DemoScenario.names.contains(scenario) else {
            throw ValidationError("unknown scenario '\(scenario)'; expected one of: \(DemoScenario.names.joined(separator: ", "))")
        }
        guard maxConcurrent >= 1 else {
            throw ValidationError("--max-concurrent must be at least 1")
        }
    }

    func run() throws {
        _ = OutputMode.choose(noTUI: noTUI)
        let queue = RequestQueue(maxConcurrentRequests: maxConcurrent)
        let demo = try DemoRunner(queue: queue)
        defer { demo.stopServers() }
        let session = HeadlessSession(queue: queue)
        let summary = session.run {
            demo.play(DemoScenario.named(scenario, wave: 1)!, onSend: session.track, shouldStop: { session.wasInterrupted })
        }
        ReqtopMain.printError(summary.line)
        throw ExitCode(summary.exitStatus)
    }
}
