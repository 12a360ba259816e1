import ArgumentParser
import FaultServer
import Foundation
import ReqtopApplication
import RequestArchive
import RequestOperations

/// `reqtop run PLAN.json`: send the requests of a plan file.
struct RunCommand: ParsableCommand, RunsASession {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the requests of a plan file.",
        discussion: """
        A plan is a JSON object with "requests" (each: "id", "method", "url", optional "headers", \
        "body", "retry", "timeout", "deadline", "dependsOn", "batch", "auth", "priority") and \
        optional top-level "retry", "timeout", "deadline", "maxConcurrent", "maxConcurrentPerHost", \
        "auth" ({"tokenURL", "credentials"}), "batches" ({"NAME": {"size", "timeLimit"}}) and \
        "retryBudgetPerHost" (false, or {"percent", "window", "minPerSecond"}; default 20 % of \
        a host's requests in 10 s plus 10 retries a second) and "circuitBreaker" (false, or \
        {"window", "minimumRequests", "failureRatio", "consecutiveFailures", "openFor", \
        "maxOpenFor", "failFast", "maxWait"}; default: open a host's breaker at 50 % failures \
        of 20 attempts in 10 s or 5 without an answer in a row, for 5 s doubling to 60 s) and \
        "rateLimitPushback" (default true: a host's Retry-After on 429/503 and its RateLimit or \
        X-RateLimit headers hold every request to it). \
        A URL may start with {{fault}} to target a fault server started in this process; \
        {{ID.field}} takes a value from the JSON answer of request ID, listed in "dependsOn". \
        See docs/plans.md for every field.
        """
    )

    @Argument(help: "The plan file (JSON).")
    var plan: String

    @OptionGroup var display: DisplayOptions

    @OptionGroup var bodyCapOption: BodyCapOption

    @OptionGroup var recording: RecordingOptions

    @OptionGroup var endpoint: ListenOption

    @OptionGroup var transport: TransportOption

    @OptionGroup var telemetry: TelemetryOption

    @OptionGroup var metrics: MetricsOption

    func run() throws {
        let plan = try PlanParser.load(path: self.plan)
        // A download must not replace the recording this command writes (the plan itself is
        // refused by the parser).
        if let record = recording.file, let index = plan.requests.firstIndex(where: { $0.saveTo.map { OutputFile.isSameFile($0, record) } == true }) {
            throw InputError(message: "\(self.plan): requests[\(index)].saveTo: \(plan.requests[index].saveTo!) is also --record's file; saving there would replace the recording")
        }
        let server = plan.usesFaultServer ? try FaultServer.start() : nil
        defer { server?.stop() }
        let transport = self.transport.merged(with: plan.connection)
        let carrier = transport.transport ?? plan.transport ?? .platformDefault
        let exporters = try telemetry.start()
        defer { exporters?.finish() }
        let scraped = try metrics.start()
        defer { scraped?.endpoint.stop() }
        let queue = RequestQueue(maxConcurrentRequests: plan.maxConcurrent, maxConcurrentRequestsPerHost: plan.maxConcurrentPerHost,
                                 transport: try transport.make(carrier, names: self.transport.tlsNames(with: plan.connection)), retryBudget: plan.retryBudgetPerHost,
                                 circuitBreaker: plan.circuitBreaker, rateLimits: plan.rateLimitPushback,
                                 instruments: (exporters?.instruments ?? []) + (scraped.map { [$0.instrument] } ?? []))
        let recorder = try recording.start(queue.events, inputs: [self.plan], settings: QueueSettings(plan: plan), insecure: !queue.environment.transport.verifiesCertificates)
        for rule in plan.faults { queue.faults.add(rule) }
        if !plan.faults.isEmpty {
            ReqtopMain.printError("reqtop: FAULTS ON: \(plan.faults.count) rule\(plan.faults.count == 1 ? "" : "s") from the plan inject failures; every injected attempt says so in its events")
        }
        let listening = try endpoint.start(queue, name: "reqtop run \(URL(fileURLWithPath: self.plan).lastPathComponent)", redactor: recording.redactor)
        defer { listening?.stop() }
        let list = PlanFlow(plan: plan, faultServer: server?.baseURL, queue: queue, bodyCap: bodyCapOption.bodyCap).requestList(plan)
        let summary = try list.run(on: queue, mode: display.mode,
                                   source: "\(URL(fileURLWithPath: self.plan).lastPathComponent) · \(transport.label(carrier))" + Telemetry.label(exporters, scraped?.endpoint), redactor: recording.redactor)
        try RecordingOptions.end(recorder, hub: queue.events, summary: summary)
    }
}
