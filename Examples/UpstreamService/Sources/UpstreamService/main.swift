// upstream-service: a small Hummingbird service whose handlers call an upstream API through
// reqtop, and which opens reqtop's monitor endpoint, so that
//
//   reqtop serve --port 8080 &                 # a stand-in upstream (the fault server)
//   swift run UpstreamService --port 8090 --upstream http://127.0.0.1:8080
//   reqtop attach                              # watch its upstream calls live
//
// Routes: GET /resource/{name} (an authenticated upstream call, decoded), GET /flaky/{key}
// (?failures=N: the upstream fails N times with 503 first; the queue retries), GET /health.
// SIGTERM or SIGINT stop it gracefully: requests in progress finish, then the endpoint
// closes after handing attached monitors every event.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Hummingbird
import Logging
import RequestEndpoint
import RequestLogging
import RequestOperations

/// `--name value` on the command line, else the environment variable, else the default.
func setting(_ flag: String, _ variable: String, default value: String) -> String {
    let arguments = CommandLine.arguments
    if let index = arguments.firstIndex(of: flag), index + 1 < arguments.count { return arguments[index + 1] }
    return ProcessInfo.processInfo.environment[variable] ?? value
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("upstream-service: \(message)\n".utf8))
    exit(2)
}

let upstreamText = setting("--upstream", "UPSTREAM_URL", default: "http://127.0.0.1:8080")
guard let upstreamURL = URL(string: upstreamText), ["http", "https"].contains(upstreamURL.scheme ?? ""), upstreamURL.host != nil else {
    fail("--upstream '\(upstreamText)' is not an http(s) URL (for example http://127.0.0.1:8080)")
}
guard let port = Int(setting("--port", "PORT", default: "8090")), (0...65535).contains(port) else {
    fail("--port must be a number from 0 to 65535")
}

LoggingSystem.bootstrap(StreamLogHandler.standardError)
let logger: Logger = {
    var logger = Logger(label: "upstream-service")
    logger.logLevel = Logger.Level(rawValue: ProcessInfo.processInfo.environment["LOG_LEVEL"] ?? "info") ?? .info
    return logger
}()

let queue = RequestQueue(maxConcurrentRequests: 8, logger: logger)
let upstream = Upstream(baseURL: upstreamURL, queue: queue)
let endpoint: MonitorEndpoint
do {
    endpoint = try queue.startMonitorEndpoint(options: .init(name: "upstream-service"))
} catch {
    fail("cannot open the monitor endpoint: \(error)")
}

let serviceLogger = logger
let app = Application(router: Routes.router(upstream: upstream), configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "upstream-service"),
                      onServerRunning: { channel in
                          let bound = channel.localAddress?.port ?? port
                          serviceLogger.info("listening", metadata: ["url": "http://127.0.0.1:\(bound)", "pid": "\(getpid())",
                                                              "upstream": "\(upstreamURL.absoluteString)",
                                                              "watch": "reqtop attach \(getpid())"])
                      },
                      logger: serviceLogger)
do {
    try await app.runService()
} catch {
    logger.error("stopped with an error", metadata: ["error": "\(error)"])
    endpoint.stop()
    exit(1)
}
// Graceful shutdown: the server has finished its requests; attached monitors get the end.
queue.cancelAll(by: "shutdown")
endpoint.stop()
logger.info("stopped cleanly")
