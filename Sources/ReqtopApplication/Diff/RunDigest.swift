import Foundation
import RequestArchive
import RequestEventFormat
import RequestOperations

/// What a recording says of each operation and each host, for comparing two runs: the
/// outcome, status, attempts and duration each operation ended with, and per host the
/// attempts sent and the times to completion.
package struct RunDigest: Equatable {
    package struct Operation: Equatable {
        package var outcome: RequestOutcome?
        package var status: Int?
        package var attempts: Int
        package var duration: TimeInterval?
        /// The upstream it went to (a what-if server counted as the one it stood for).
        package var host: String?
        /// Its request held a redacted value (sent again, in a what-if, as the placeholder).
        package var redacted = false
        /// An attempt of it was answered by reqtop itself (`injected`: a fault, or a person's
        /// answer at a breakpoint), which a what-if re-run does not carry over.
        package var injected = false
        /// It met its host's circuit breaker: it waited for it, or an attempt of it opened it or
        /// carried its probe.
        package var metBreaker = false
        /// How long its attempts, ready to go, waited for a slot (from the event before each
        /// `started`, or a retry's due time, to the `started`): the host's gate was full.
        package var slotWait: TimeInterval = 0

        /// How it ended: what two runs must share to have ended alike.
        package var end: End { End(outcome: outcome, status: status, attempts: attempts) }
    }

    package struct End: Hashable {
        package var outcome: RequestOutcome?
        package var status: Int?
        package var attempts: Int
    }

    /// Whether this run is a what-if re-run (its header names the upstreams it stood for).
    package var isWhatIf = false

    package struct Host: Equatable {
        package var operations = 0
        package var attempts = 0
        package var failures = 0
        package var durations: [TimeInterval] = []
        /// Attempts sent in each whole second of the run: the load over time.
        package var perSecond: [Int: Int] = [:]

        /// The most attempts sent in one second: the load at the peak.
        package var peak: Int { perSecond.values.max() ?? 0 }

        /// Attempts per operation: what the retries cost the upstream.
        package var amplification: Double { operations == 0 ? 0 : Double(attempts) / Double(operations) }
        package func percentile(_ fraction: Double) -> TimeInterval? {
            guard !durations.isEmpty else { return nil }
            let sorted = durations.sorted()
            return sorted[min(sorted.count - 1, max(0, Int((fraction * Double(sorted.count)).rounded(.up)) - 1))]
        }
    }

    package var operations: [String: Operation] = [:]
    package var hosts: [String: Host] = [:]

    /// `origins`: `host:port` → the host to count it under (a what-if run's server counts as
    /// the recorded upstream it stood for: its recording's header says which).
    package init(events: [RequestEvent], origins: [String: String] = [:]) {
        isWhatIf = !origins.isEmpty
        var hostOf: [String: String] = [:]
        var redacted: Set<String> = []
        var injected: Set<String> = []
        var metBreaker: Set<String> = []
        var readyAt: [String: TimeInterval] = [:]
        var slotWait: [String: TimeInterval] = [:]
        for event in events where !event.operationID.isEmpty {
            let id = event.operationID
            // An attempt is ready to ask for a slot after whatever came before it (queued, a
            // hold's end, a breaker's closing), or when its retry's delay is over.
            let wasReady = readyAt[id]
            readyAt[id] = event.time
            switch event.payload {
            case .queued(_, let url, let headers, _, let body, _), .built(_, let url, let headers, let body):
                if Self.carriesPlaceholder(url: url, headers: headers, body: body) { redacted.insert(id) }
                let named = URL(string: url).map { url in url.host.map { "\($0)\(url.port.map { ":\($0)" } ?? "")" } ?? "(no host)" } ?? "(no host)"
                let host = origins[named] ?? named
                if hostOf[id] == nil { hosts[host, default: Host()].operations += 1 }
                hostOf[id] = host
                if operations[id] == nil { operations[id] = Operation(outcome: nil, status: nil, attempts: 0, duration: nil, host: host) }
            case .taskCreated:
                if let host = hostOf[id] {
                    hosts[host, default: Host()].attempts += 1
                    hosts[host, default: Host()].perSecond[Int(event.time), default: 0] += 1
                }
            case .finished(let outcome, let status, let attempts, let duration, _):
                operations[id] = Operation(outcome: outcome, status: status, attempts: attempts, duration: duration, host: hostOf[id],
                                           redacted: redacted.contains(id), injected: injected.contains(id), metBreaker: metBreaker.contains(id),
                                           slotWait: slotWait[id] ?? 0)
                if let host = hostOf[id] {
                    if outcome == .failure { hosts[host, default: Host()].failures += 1 }
                    if outcome != .cancelled { hosts[host, default: Host()].durations.append(duration) }
                }
            case .injected:
                injected.insert(id)
            case .circuitWaiting, .circuitOpened, .circuitHalfOpen:
                metBreaker.insert(id)
            case .started:
                if let wasReady { slotWait[id, default: 0] += max(0, event.time - wasReady) }
            case .retryScheduled(let delay, _):
                readyAt[id] = event.time + delay
            case .sent, .connection, .preparationFailed, .redirect, .response, .data, .uploaded, .responseBody, .requestBody, .headerFields, .messages, .trailers,
                 .taskCompleted, .validationFailed, .retryDenied, .hedged, .breakpoint,
                 .breakpointResolved, .breakpointSet, .breakpointRemoved,
                 .circuitClosed, .rateLimitWaiting, .rateLimited, .retryBudget, .earlyRetry, .intercepted, .held, .released,
                 .reactorStarted, .reactorWaiting, .reactorFinished, .requeued, .cancelled, .missed, .other:
                break
            }
        }
    }

    private static func carriesPlaceholder(url: String, headers: [String: String], body: RecordedBody?) -> Bool {
        if url.contains(Redactor.urlPlaceholder) || headers.values.contains(where: { $0.contains(Redactor.placeholder) }) {
            return true
        }
        if case .bytes(let data)? = body { return !Redactor.redactedFields(body: data, headers: headers).isEmpty }
        return false
    }
}
