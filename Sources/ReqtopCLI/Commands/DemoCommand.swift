import ArgumentParser
import Foundation
import ReqtopApplication
import RequestOperations
import Synchronization

/// `reqtop demo`: the built-in flow on in-process fault servers.
struct DemoCommand: ParsableCommand, RunsASession {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the built-in demo flow against fault servers started in this process.",
        discussion: """
        Nothing to set up: the demo starts its own HTTP servers on 127.0.0.1 (free ports) and \
        sends requests that show retries with backoff, Retry-After, early retry, a hedged read, \
        a slow download, redirects, cut-off and reset connections, a cancellation, exhausted \
        retries, a burst to a failing host whose retries the retry budget refuses, and a host \
        outage whose circuit breaker opens, probes and closes.

        Scenarios: default (about 20 seconds), quick (about 3 seconds).

        Some demo requests fail on purpose, so the demo exits with status 1.
        """
    )

    @Option(help: "The scenario to run: \(DemoScenario.names.joined(separator: ", ")).")
    var scenario = "default"

    @OptionGroup var display: DisplayOptions

    @Flag(help: "In the monitor, run one wave of the demo instead of starting new waves until you quit.")
    var once = false

    // `.unconditional`: `--max-concurrent -5` reaches validate() (a value below 1), where
    // argument-parser would take `-5` for a flag and say the value is missing.
    @Option(parsing: .unconditional, help: "Requests in flight at once.")
    var maxConcurrent = 6

    @OptionGroup var recording: RecordingOptions

    @OptionGroup var endpoint: ListenOption

    @OptionGroup var transport: TransportOption

    @OptionGroup var telemetry: TelemetryOption

    @OptionGroup var metrics: MetricsOption

    func validate() throws {
        guard DemoScenario.names.contains(scenario) else {
            throw ValidationError("unknown scenario '\(scenario)'; expected one of: \(DemoScenario.names.joined(separator: ", "))")
        }
        guard maxConcurrent >= 1 else {
            throw ValidationError("--max-concurrent must be at least 1")
        }
    }

    func run() throws {
        let carrier = transport.transport ?? .platformDefault
        let exporters = try telemetry.start()
        defer { exporters?.finish() }
        let scraped = try metrics.start()
        defer { scraped?.endpoint.stop() }
        let queue = RequestQueue(maxConcurrentRequests: maxConcurrent, transport: try transport.make(carrier), retryBudget: DemoScenario.retryBudget,
                                 circuitBreaker: DemoScenario.circuitBreaker,
                                 instruments: (exporters?.instruments ?? []) + (scraped.map { [$0.instrument] } ?? []))
        let demo = try DemoRunner(queue: queue)
        defer { demo.stopServers() }
        let recorder = try recording.start(queue.events, settings: QueueSettings(maxConcurrent: maxConcurrent, retryBudgetPerHost: DemoScenario.retryBudget,
                                                                               circuitBreaker: DemoScenario.circuitBreaker))
        let listening = try endpoint.start(queue, name: "reqtop demo", redactor: recording.redactor)
        defer { listening?.stop() }
        let session = try QueueSession.open(queue, mode: display.mode, source: "demo (\(scenario)) · \(transport.label(carrier))"
                                                + Telemetry.label(exporters, scraped?.endpoint), redactor: recording.redactor)
        // The monitor plays wave after wave until the person quits (one with --once); headless, one.
        let scenario = self.scenario, waves = session.isMonitor && !once
        let summary = session.run {
            var wave = 1
            while true {
                let operations = Mutex<[RequestOperation]>([])
                demo.play(DemoScenario.named(scenario, wave: wave)!, onSend: { operation in
                    session.track(operation)
                    operations.withLock { $0.append(operation) }
                }, shouldStop: { session.isStopping })
                guard waves else { break }
                // The next wave starts a few seconds after this one has ended.
                while !session.isStopping, operations.withLock({ $0.contains { $0.result == nil } }) { Thread.sleep(forTimeInterval: 0.2) }
                for _ in 0..<15 where !session.isStopping { Thread.sleep(forTimeInterval: 0.2) }
                guard !session.isStopping else { break }
                wave += 1
            }
        }
        try RecordingOptions.end(recorder, hub: queue.events, summary: summary)
    }
}
