import Foundation

/// One host as the Hosts view shows it, made from the rows alone (so it works live, in a
/// replay and attached): what is in flight and waiting, how many operations and retries,
/// what failed, how long they took, and how many retries its retry budget refused.
public struct HostSummary: Sendable, Equatable {
    public var host: String
    /// Running or preparing now.
    public var inFlight = 0
    /// Queued, held or waiting to retry.
    public var waiting = 0
    public var operations = 0
    /// Attempts after each operation's first.
    public var retries = 0
    /// Retries the host's retry budget refused (`retryDenied`).
    public var denied = 0
    public var succeeded = 0
    public var failed = 0
    public var cancelled = 0
    /// Answers other than 2xx a transparent proxy passed on as they came: answered, not failed.
    public var relayed = 0
    /// Durations of finished operations, seconds, median and 95th percentile.
    public var p50: TimeInterval?
    public var p95: TimeInterval?
    /// The host's circuit breaker, when events have told of it.
    public var circuit: CircuitMark?
    /// Until when (session time) the host asked every client to pause.
    public var pausedUntil: TimeInterval?
    /// Retries the host's retry budget allowed at its latest retry (nil before any).
    public var budgetLeft: Int?
    /// Attempts whose failure reqtop injected (beside the real ones counted with the rest).
    public var injected = 0
    /// The key the breaker knows the host by (`host:port`), for isolate and close.
    public var circuitHost: String?

    /// Failed of those that finished other than cancelled (nil before any did); a relayed
    /// answer counts as answered.
    public var failureRatio: Double? {
        succeeded + relayed + failed == 0 ? nil : Double(failed) / Double(succeeded + relayed + failed)
    }

    /// Every host of `model`, busiest first (then by name), from the model's running
    /// tallies: O(hosts + finished durations) a frame, whatever the rows.
    /// - Parameter byProgram: one line per host and program (`4121/api.example.com`), in a
    ///   merged view of several programs; their commands then go to that program alone.
    public static func compute(_ model: QueueModel, byProgram: Bool = false) -> [HostSummary] {
        if byProgram, !model.programHosts.isEmpty {
            let split = model.programHosts
            return compute(split.hosts, circuits: split.circuits, rateLimitedUntil: split.rateLimitedUntil,
                           retryBudgetLeft: split.retryBudgetLeft, injected: split.injected)
        }
        return compute(model.hosts, circuits: model.circuits, rateLimitedUntil: model.rateLimitedUntil,
                       retryBudgetLeft: model.retryBudgetLeft, injected: model.injectedPerHost)
    }

    static func compute(_ hosts: [String: HostTally], circuits: [String: CircuitMark], rateLimitedUntil: [String: TimeInterval],
                        retryBudgetLeft: [String: Int], injected: [String: Int]) -> [HostSummary] {
        var unmatched = circuits
        var summaries = hosts.map { host, tally in
            var summary = HostSummary(host: host)
            // The tally's key is the breaker's (`host:port`, the port always written).
            summary.circuitHost = tally.key
            if let key = tally.key {
                summary.pausedUntil = rateLimitedUntil[key]
                summary.budgetLeft = retryBudgetLeft[key]
                summary.circuit = unmatched.removeValue(forKey: key) ?? circuits[key]
            }
            summary.operations = tally.operations
            summary.inFlight = tally.states[.running, default: 0] + tally.states[.preparing, default: 0]
            summary.waiting = tally.states[.queued, default: 0] + tally.states[.held, default: 0] + tally.states[.backoff, default: 0]
            summary.succeeded = tally.states[.succeeded, default: 0]
            summary.failed = tally.states[.failed, default: 0]
            summary.cancelled = tally.states[.cancelled, default: 0]
            summary.relayed = tally.states[.relayed, default: 0]
            summary.retries = tally.retries
            summary.injected = injected[host, default: 0]
            summary.denied = tally.denied
            var durations = tally.durations
            summary.p50 = select(&durations, 0.50)
            summary.p95 = select(&durations, 0.95)
            return summary
        }
        // A breaker whose host has no row (isolated before any request went to it).
        for (host, mark) in unmatched {
            var summary = HostSummary(host: host)
            summary.circuit = mark
            summary.circuitHost = host
            summaries.append(summary)
        }
        return summaries.sorted { ($0.operations, $1.host) > ($1.operations, $0.host) }
    }

    /// The nearest-rank percentile, found by selection (Hoare's quickselect, O(n) on
    /// average) rather than by sorting every duration each frame. Reorders `values`.
    static func select(_ values: inout [TimeInterval], _ fraction: Double) -> TimeInterval? {
        guard !values.isEmpty else { return nil }
        let k = min(values.count - 1, max(0, Int((fraction * Double(values.count)).rounded(.up)) - 1))
        var low = 0, high = values.count - 1
        while low < high {
            let pivot = values[(low + high) / 2]
            var i = low, j = high
            while i <= j {
                while values[i] < pivot { i += 1 }
                while values[j] > pivot { j -= 1 }
                if i <= j {
                    values.swapAt(i, j)
                    i += 1
                    j -= 1
                }
            }
            if k <= j { high = j } else if k >= i { low = i } else { break }
        }
        return values[k]
    }
}
