import ArgumentParser
import Foundation
import ReqtopApplication
import Prometheus
import RequestMetrics
import RequestOperations

/// `--metrics HOST:PORT`: the run's metrics for Prometheus to scrape at
/// `http://HOST:PORT/metrics`, loopback unless a host is named (`:9464` is 127.0.0.1:9464).
struct MetricsOption: ParsableArguments {
    @Option(name: .customLong("metrics"),
            help: ArgumentHelp("Serve the run's metrics for Prometheus at http://HOST:PORT/metrics (HOST defaults to 127.0.0.1; port 0 picks one, printed on stderr).",
                               valueName: "HOST:PORT"))
    var metrics: String?

    func validate() throws {
        if let metrics { _ = try Self.address(metrics) }
    }

    static func address(_ text: String) throws -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else {
            throw ValidationError("--metrics: \"\(text)\" is not HOST:PORT; expected for example 127.0.0.1:9464 or :9464")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "127.0.0.1" : host, port)
    }

    /// Opens the endpoint when asked; its instrument goes to the queue.
    func start() throws -> (endpoint: PrometheusEndpoint, instrument: RequestMetrics)? {
        guard let metrics else { return nil }
        let (host, port) = try Self.address(metrics)
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Prometheus wants names of letters, digits and underscores: http.client.request.duration
        // becomes http_client_request_duration_seconds (a histogram, as the conventions' is).
        factory.nameAndLabelSanitizer = { name, labels in
            (Self.sanitized(name) + (name.hasSuffix(".duration") || name.hasSuffix(".wait") ? "_seconds" : ""),
             labels.map { (Self.sanitized($0.0), $0.1) })
        }
        let endpoint: PrometheusEndpoint
        do {
            endpoint = try PrometheusEndpoint(host: host, port: port, registry: registry)
        } catch {
            throw InputError(message: "--metrics: cannot listen on \(host):\(port) (\(error))")
        }
        ReqtopMain.printError("reqtop: metrics for Prometheus at http://\(HostAddress.authority(host, port: endpoint.port))/metrics")
        return (endpoint, RequestMetrics(factory: factory))
    }

    static func sanitized(_ name: String) -> String {
        String(name.map { $0.isLetter || $0.isNumber || $0 == "_" ? $0 : "_" })
    }
}
