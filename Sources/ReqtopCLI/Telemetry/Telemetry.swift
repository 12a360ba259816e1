import Dispatch
import Foundation
import ReqtopApplication
import Logging
import OTel
import RequestMetrics
import RequestOperations
import RequestTracing
import ServiceLifecycle
import Synchronization

/// The OTLP/HTTP exporters of one run (swift-otel with only its OTLP/HTTP trait): a tracer
/// and a metrics factory handed to the queue as instruments, and the services that batch and
/// send what they record, running until ``finish(timeout:)`` flushes them.
///
/// A collector that cannot be reached is reported once on stderr; requests never wait for it.
final class Telemetry: Sendable {
    let instruments: [RequestInstrument]
    private let group: ServiceGroup
    private let stopped = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - endpoint: the collector's base URL (`/v1/traces` and `/v1/metrics` are added).
    ///   - explicit: given by `--otlp` (else it came from the environment, which swift-otel reads itself).
    ///   - spanQueue: spans held for sending at most (a recording sent at once needs room for all).
    init(endpoint: String, explicit: Bool, spanQueue: Int? = nil) throws {
        var configuration = OTel.Configuration.default
        configuration.serviceName = ProcessInfo.processInfo.environment["OTEL_SERVICE_NAME"].flatMap { $0.isEmpty ? nil : $0 } ?? "reqtop"
        configuration.logs.enabled = false
        configuration.diagnosticLogger = .custom(Logger(label: "reqtop.telemetry") { _ in ReportOnceLogHandler(endpoint: endpoint) })
        configuration.diagnosticLogLevel = .warning
        // A run lasts seconds to minutes: send spans soon and metrics every few seconds.
        configuration.traces.batchSpanProcessor.scheduleDelay = .milliseconds(500)
        if let spanQueue { configuration.traces.batchSpanProcessor.maxQueueSize = max(2_048, spanQueue) }
        configuration.metrics.exportInterval = .seconds(5)
        // AsyncHTTPClient retries a refused connection until the request's timeout: keep it short.
        configuration.traces.otlpExporter.timeout = .seconds(3)
        configuration.metrics.otlpExporter.timeout = .seconds(3)
        if explicit {
            let base = try TelemetryOption.baseURL(endpoint)
            configuration.traces.otlpExporter.endpoint = base + "/v1/traces"
            configuration.metrics.otlpExporter.endpoint = base + "/v1/metrics"
        }
        let tracing = try OTel.makeTracingBackend(configuration: configuration)
        let metrics = try OTel.makeMetricsBackend(configuration: configuration)
        instruments = [RequestTracer(tracer: tracing.factory), RequestMetrics(factory: metrics.factory)]
        group = ServiceGroup(configuration: .init(services: [.init(service: tracing.service), .init(service: metrics.service)],
                                                  logger: Logger(label: "reqtop.telemetry", factory: { _ in SwiftLogNoOpLogHandler() })))
        self.collector = HostKey(url: URL(string: explicit ? try TelemetryOption.baseURL(endpoint) : endpoint))
        self.endpoint = endpoint
        let group = self.group, stopped = self.stopped
        Task.detached {
            try? await group.run()
            stopped.signal()
        }
        // Said at once rather than when the first export gives up seconds later.
        if !reachable() {
            ReportOnceLogHandler.sayOnce("reqtop: telemetry: cannot connect to the collector at \(endpoint); requests go on, spans and metrics are sent if it comes up")
        }
    }

    private let collector: HostKey?
    private let endpoint: String

    /// Whether the collector's port accepts a connection (within half a second).
    private func reachable() -> Bool {
        guard let collector else { return true }
        let answer = Mutex<Bool?>(nil), done = DispatchSemaphore(value: 0)
        TCPConnectProbe().probe(collector, timeout: 0.5) { up in
            answer.withLock { $0 = up }
            done.signal()
        }
        _ = done.wait(timeout: .now() + 1)
        return answer.withLock { $0 } ?? false
    }

    /// What the monitor's header adds for the run's telemetry (the line on stderr is hidden
    /// while the monitor is up, and with `--metrics :0` it is the only place the port shows).
    static func label(_ telemetry: Telemetry?, _ metrics: PrometheusEndpoint?) -> String {
        (telemetry == nil ? "" : " · otlp") + (metrics.map { " · metrics \($0.host):\($0.port)" } ?? "")
    }

    /// Sends what is still batched and stops the exporters: at most `timeout` seconds, so an
    /// unreachable collector cannot keep the program from ending.
    func finish(timeout: TimeInterval = 5) {
        let group = self.group
        Task.detached { await group.triggerGracefulShutdown() }
        // A collector that is not there gets a second, not five: what it did not take is lost anyway.
        let wait = reachable() ? timeout : 1
        if stopped.wait(timeout: .now() + wait) == .timedOut {
            ReportOnceLogHandler.sayOnce("reqtop: telemetry to \(endpoint) not flushed within \(Int(wait)) s; some spans or metrics were not sent")
        }
    }
}

/// swift-otel's diagnostics, reduced to what a person needs: the first warning or error (a
/// collector that cannot be reached, a refused export) once on stderr, nothing after.
struct ReportOnceLogHandler: LogHandler {
    static let reported = Mutex(false)
    let endpoint: String
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .warning

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        guard event.level >= .warning else { return }
        let detail = (event.metadata ?? [:]).merging(metadata) { new, _ in new }
            .sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        Self.sayOnce("reqtop: telemetry to \(endpoint): \(event.message)\(detail.isEmpty ? "" : " (\(detail))"); requests go on, this is said once")
    }

    /// Prints `message` unless something about telemetry was said already.
    static func sayOnce(_ message: String) {
        let first = reported.withLock { reported in
            defer { reported = true }
            return !reported
        }
        if first { ReqtopMain.printError(message) }
    }
}
