import CoreMetrics
import Foundation
import RequestOperations

/// Each event's effect on the metrics. Metric objects are made per event from the factory
/// (swift-metrics backends cache handlers by label and dimensions).
extension RequestMetrics {
    static let requestDuration = "http.client.request.duration"
    static let activeRequests = "http.client.active_requests"
    static let operations = "reqtop.operations"
    static let retries = "reqtop.retries"
    static let retryWait = "reqtop.retry.wait"
    static let retriesDenied = "reqtop.retries.denied"
    static let hedges = "reqtop.hedges"
    static let circuitState = "reqtop.circuit.state"

    func record(_ event: RequestEvent) {
        let id = event.operationID
        if id.isEmpty {
            recordHostLevel(event.payload)
            return
        }
        switch event.payload {
        case .queued(let method, let url, _, _, _, _), .built(let method, let url, _, _):
            state.withLock { $0.targets[id] = Self.target(method: method, url: url) }
        case .taskCreated:
            guard let target = state.withLock({ state -> Target? in
                state.inFlight[id, default: [:]][event.attempt] = InFlight(since: event.time)
                return state.targets[id]
            }) else { return }
            Meter(label: Self.activeRequests, dimensions: Self.dimensions(target), factory: factory).increment()
        case .response(let status, _, _, _):
            state.withLock { $0.inFlight[id]?[event.attempt]?.status = status }
        case .taskCompleted(let error):
            guard let (target, attempt) = state.withLock({ state -> (Target, InFlight)? in
                guard let target = state.targets[id], let attempt = state.inFlight[id]?.removeValue(forKey: event.attempt) else { return nil }
                state.lastFailure[id] = Self.failureKind(status: attempt.status, error: error)
                return (target, attempt)
            }) else { return }
            Meter(label: Self.activeRequests, dimensions: Self.dimensions(target), factory: factory).decrement()
            var dimensions = Self.dimensions(target)
            if let status = attempt.status { dimensions.append(("http.response.status_code", "\(status)")) }
            if let kind = Self.errorType(status: attempt.status, error: error) { dimensions.append(("error.type", kind)) }
            Timer(label: Self.requestDuration, dimensions: dimensions, preferredDisplayUnit: .seconds, factory: factory)
                .recordSeconds(max(0, event.time - attempt.since))
        case .retryScheduled(let delay, _):
            guard let (target, reason) = state.withLock({ state in state.targets[id].map { ($0, state.lastFailure[id] ?? "_OTHER") } }) else { return }
            Counter(label: Self.retries, dimensions: [("server.address", target.address), ("server.port", target.port), ("reason", reason)],
                    factory: factory).increment()
            Timer(label: Self.retryWait, dimensions: [("server.address", target.address), ("server.port", target.port)],
                  preferredDisplayUnit: .seconds, factory: factory).recordSeconds(delay)
        case .retryDenied:
            guard let target = state.withLock({ $0.targets[id] }) else { return }
            Counter(label: Self.retriesDenied, dimensions: [("server.address", target.address), ("server.port", target.port)], factory: factory).increment()
        case .hedged:
            guard let target = state.withLock({ $0.targets[id] }) else { return }
            Counter(label: Self.hedges, dimensions: [("server.address", target.address), ("server.port", target.port)], factory: factory).increment()
        case .finished(let outcome, _, _, _, _):
            // Attempts still in flight when the operation ended (cancelled) report no completion.
            guard let (target, open) = state.withLock({ state -> (Target, Int)? in
                defer {
                    state.targets[id] = nil
                    state.inFlight[id] = nil
                    state.lastFailure[id] = nil
                }
                return state.targets[id].map { ($0, state.inFlight[id]?.count ?? 0) }
            }) else { return }
            if open > 0 { Meter(label: Self.activeRequests, dimensions: Self.dimensions(target), factory: factory).decrement(by: Double(open)) }
            Counter(label: Self.operations, dimensions: Self.dimensions(target) + [("outcome", outcome.rawValue)], factory: factory).increment()
        case .started, .sent, .connection, .preparationFailed, .redirect, .data, .uploaded, .responseBody, .requestBody, .headerFields, .messages, .trailers, .validationFailed,
             .injected, .breakpoint, .breakpointResolved, .breakpointSet, .breakpointRemoved, .circuitWaiting, .circuitOpened,
             .circuitHalfOpen, .circuitClosed, .rateLimitWaiting, .rateLimited, .retryBudget, .earlyRetry, .intercepted, .held,
             .released, .reactorStarted, .reactorWaiting, .reactorFinished, .requeued, .cancelled, .missed, .other:
            break
        }
    }

    private func recordHostLevel(_ payload: RequestEvent.Payload) {
        let value: Int
        switch payload {
        case .circuitOpened: value = 2
        case .circuitHalfOpen: value = 1
        case .circuitClosed: value = 0
        case .queued, .built, .started, .sent, .connection, .preparationFailed, .taskCreated, .redirect, .response, .data,
             .uploaded, .responseBody, .requestBody, .headerFields, .messages, .trailers, .taskCompleted, .validationFailed, .retryScheduled, .retryDenied, .hedged, .injected,
             .breakpoint, .breakpointResolved, .breakpointSet, .breakpointRemoved, .circuitWaiting, .rateLimitWaiting,
             .rateLimited, .retryBudget, .earlyRetry, .intercepted, .held, .released, .reactorStarted, .reactorWaiting,
             .reactorFinished, .requeued, .cancelled, .finished, .missed, .other: return
        }
        guard let host = payload.host else { return }
        let (address, port) = Self.split(host)
        Gauge(label: Self.circuitState, dimensions: [("server.address", address), ("server.port", port)], factory: factory).record(value)
    }

    /// The engine's own reading of a URL's host and port (default port by scheme).
    static func target(method: String, url: String) -> Target {
        let server = HostKey(url: URL(string: url))
        return Target(method: method, address: server?.host ?? "", port: server.map { "\($0.port)" } ?? "")
    }

    static func dimensions(_ target: Target) -> [(String, String)] {
        [("http.request.method", target.method), ("server.address", target.address), ("server.port", target.port)]
    }

    /// `host:port` as the breaker names hosts.
    static func split(_ host: String) -> (String, String) {
        guard let colon = host.lastIndex(of: ":") else { return (host, "") }
        return (String(host[..<colon]), String(host[host.index(after: colon)...]))
    }

    /// `error.type` as the conventions want it: the status for 4xx/5xx, a short name for a
    /// transport error, nil for a success.
    static func errorType(status: Int?, error: TransportError?) -> String? {
        if let error {
            return error.kind
        }
        if let status, status >= 400 { return "\(status)" }
        return nil
    }

    /// Why an attempt failed, as a retry's `reason` dimension (few values: a status or a name).
    static func failureKind(status: Int?, error: TransportError?) -> String {
        errorType(status: status, error: error) ?? "_OTHER"
    }
}
