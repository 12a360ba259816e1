import Foundation
import Logging
import RequestEventFormat
import RequestOperations
import Synchronization

/// Writes what a queue decides to a swift-log `Logger`, from its events:
///
/// - `debug`: each retry decision (`retrying in 0.5s`, with the policy's reason), each early
///   retry, each reactor run (started, finished) and each requeue, and cancellations;
/// - `info`: each operation that ends in failure, with its reason.
///
/// Metadata: `op`, `attempt`, `host`, and what the line is about (`reason`, `delay`,
/// `reactor`, `status`, ...). URLs go through the same `Redactor` as recordings, and no
/// header or body is logged, so nothing secret reaches the log.
///
/// It follows the SSWG convention: the library never bootstraps logging; without a logger
/// nothing is subscribed and nothing is logged.
public final class RequestLogger: Sendable {
    private let logger: Logger
    private let redactor: Redactor
    /// Each running operation's host and redacted URL, from its `queued` (or `built`) event.
    private let requests = Mutex<[String: (host: String, url: String)]>([:])

    /// Starts logging `hub`'s events to `logger` for as long as the hub lives.
    @discardableResult
    public static func attach(to hub: EventHub, logger: Logger, redactor: Redactor = Redactor()) -> RequestLogger {
        let requestLogger = RequestLogger(logger: logger, redactor: redactor)
        // The hub keeps the subscriber (and so this logger) for its whole life.
        _ = hub.subscribe(label: "reqtop.logging") { batch in batch.forEach(requestLogger.log) }
        return requestLogger
    }

    init(logger: Logger, redactor: Redactor) {
        self.logger = logger
        self.redactor = redactor
    }

    func log(_ event: RequestEvent) {
        switch event.payload {
        case .queued(_, let url, _, _, _, _), .built(_, let url, _, _):
            let redacted = redactor.redact(url: url)
            let host = URLComponents(string: url).map { [$0.host ?? "", $0.port.map { ":\($0)" } ?? ""].joined() } ?? ""
            requests.withLock { $0[event.operationID] = (host, redacted) }
            return
        case .started, .sent, .connection, .preparationFailed, .taskCreated, .redirect, .response, .data, .uploaded,
             .responseBody, .requestBody, .headerFields, .messages, .trailers, .taskCompleted, .validationFailed, .retryScheduled, .retryDenied, .hedged, .injected, .breakpoint,
             .breakpointResolved, .breakpointSet, .breakpointRemoved, .circuitWaiting, .circuitOpened, .circuitHalfOpen,
             .circuitClosed, .rateLimitWaiting, .rateLimited, .retryBudget, .earlyRetry, .intercepted, .held, .released,
             .reactorStarted, .reactorWaiting, .reactorFinished, .requeued, .cancelled, .finished, .missed, .other:
            break
        }
        guard logger.logLevel <= .info else {
            if case .finished = event.payload { forget(event.operationID) }
            return
        }
        switch event.payload {
        case .retryScheduled(let delay, let reason):
            logger.debug("retrying in \(Self.seconds(delay))", metadata: metadata(event, ["delay": "\(Self.seconds(delay))", "reason": "\(reason)"]))
        case .retryDenied(let reason):
            logger.debug("retry denied", metadata: metadata(event, ["reason": "\(reason)"]))
        case .hedged(let racing, let after):
            logger.debug("hedged", metadata: metadata(event, ["racing": "\(racing)", "after": "\(Self.seconds(after))"]))
        case .earlyRetry(let trigger, let delay):
            logger.debug("retrying early", metadata: metadata(event, ["trigger": "\(trigger)", "delay": "\(Self.seconds(delay))"]))
        case .reactorStarted(let name, let trigger):
            logger.debug("reactor run started", metadata: metadata(event, ["reactor": "\(name)", "reason": "\(trigger)"]))
        case .reactorFinished(let name, let outcome):
            logger.debug("reactor run finished", metadata: metadata(event, ["reactor": "\(name)", "outcome": "\(outcome)"]))
        case .requeued(let by, let reason):
            logger.debug("requeued", metadata: metadata(event, ["reactor": "\(by)", "reason": "\(reason)"]))
        case .circuitOpened(let host, let reason, _):
            logger.info("circuit opened", metadata: ["host": "\(host)", "reason": "\(reason)"])
        case .circuitHalfOpen(let host):
            logger.info("circuit half-open", metadata: ["host": "\(host)"])
        case .circuitClosed(let host, let reason):
            logger.info("circuit closed", metadata: ["host": "\(host)", "reason": "\(reason)"])
        case .retryBudget(let host, let left):
            logger.debug("retry budget", metadata: ["host": "\(host)", "left": "\(left)"])
        case .rateLimited(let host, _, let reason):
            logger.info("host asked to slow down", metadata: ["host": "\(host)", "reason": "\(reason)"])
        case .circuitWaiting(let host):
            logger.debug("waiting for the circuit breaker", metadata: metadata(event, ["host": "\(host)"]))
        case .cancelled(let by):
            logger.debug("cancelled", metadata: metadata(event, ["by": "\(by)"]))
        case .finished(let outcome, let status, let attempts, let duration, let reason):
            if outcome == .failure {
                var fields: Logger.Metadata = ["attempts": "\(attempts)", "duration": "\(Self.seconds(duration))",
                                               "reason": "\(reason ?? "failed")"]
                if let status { fields["status"] = "\(status)" }
                if let url = requests.withLock({ $0[event.operationID]?.url }) { fields["url"] = "\(url)" }
                logger.info("request failed", metadata: metadata(event, fields))
            }
            forget(event.operationID)
        case .queued, .built, .started, .sent, .connection, .preparationFailed, .taskCreated, .redirect, .response, .data,
             .uploaded, .responseBody, .requestBody, .headerFields, .messages, .trailers, .taskCompleted, .validationFailed, .injected, .breakpoint, .breakpointResolved,
             .breakpointSet, .breakpointRemoved, .rateLimitWaiting, .intercepted, .held, .released, .reactorWaiting, .missed,
             .other:
            break
        }
    }

    private func forget(_ id: String) {
        requests.withLock { $0[id] = nil }
    }

    private func metadata(_ event: RequestEvent, _ fields: Logger.Metadata) -> Logger.Metadata {
        var all = fields
        all["op"] = "\(event.operationID)"
        all["attempt"] = "\(event.attempt)"
        if let host = requests.withLock({ $0[event.operationID]?.host }), !host.isEmpty { all["host"] = "\(host)" }
        return all
    }

    static func seconds(_ value: TimeInterval) -> String {
        String(format: "%.3fs", value)
    }
}

extension RequestQueue {
    /// A queue whose decisions are logged to `logger` (see ``RequestLogger``); the other
    /// parameters are those of `RequestQueue.init(maxConcurrentRequests:...)`.
    /// With `logger` nil nothing is logged.
    public convenience init(maxConcurrentRequests: Int = 6, maxConcurrentRequestsPerHost: Int? = nil, logger: Logger?,
                            session: SharedSession = .shared, clock: RequestClock = SystemClock(),
                            random: RandomSource = SystemRandomSource(), earlyRetry: HostRecoveryCenter.Options? = .init()) {
        self.init(maxConcurrentRequests: maxConcurrentRequests, maxConcurrentRequestsPerHost: maxConcurrentRequestsPerHost,
                  session: session, clock: clock, random: random, earlyRetry: earlyRetry)
        if let logger { RequestLogger.attach(to: events, logger: logger) }
    }
}
