import ArgumentParser
import Foundation
import ReqtopApplication
import RequestOperations

/// `--otlp URL`: send this run's traces (a span per attempt) and metrics to an OpenTelemetry
/// collector over OTLP/HTTP. The standard `OTEL_EXPORTER_OTLP_ENDPOINT` does the same without
/// the flag, and `OTEL_SERVICE_NAME` names the service (`reqtop` by default).
struct TelemetryOption: ParsableArguments {
    @Option(name: .customLong("otlp"),
            help: ArgumentHelp("Send traces (a span per attempt) and metrics to an OpenTelemetry collector over OTLP/HTTP, e.g. http://127.0.0.1:4318 (OTEL_EXPORTER_OTLP_ENDPOINT does the same).",
                               valueName: "URL"))
    var otlp: String?

    func validate() throws {
        guard let otlp else { return }
        _ = try Self.baseURL(otlp)
    }

    /// The collector's base URL, checked: http or https, with a host.
    static func baseURL(_ text: String) throws -> String {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = url.host, !host.isEmpty else {
            throw ValidationError("--otlp: \"\(text)\" is not a collector's URL; expected http://HOST:PORT (OTLP/HTTP, usually port 4318)")
        }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    /// The collector to send to: the flag's, else the environment's; nil when neither names one.
    var endpoint: String? {
        if let otlp { return otlp }
        let environment = ProcessInfo.processInfo.environment
        return (environment["OTEL_EXPORTER_OTLP_ENDPOINT"] ?? environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Starts the exporters when a collector is named; nil otherwise (nothing is paid then).
    func start() throws -> Telemetry? {
        guard let endpoint else { return nil }
        do {
            return try Telemetry(endpoint: endpoint, explicit: otlp != nil)
        } catch {
            throw InputError(message: "cannot send telemetry to \(endpoint): \(error)")
        }
    }
}
