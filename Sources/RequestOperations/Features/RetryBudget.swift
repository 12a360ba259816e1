import Foundation
import Synchronization

/// Caps the retries sent to each host, so that a host in trouble gets a few retries more
/// than its requests, not N retries for every request — the moment an upstream falls over
/// is the moment a fleet of clients must not multiply its load.
///
/// The engine tells the budget of each operation's first attempt (``requestSent(to:)``) and
/// asks it before every retry the retry policy wants (``spendRetry(on:)``). A refused retry
/// ends the operation as a failure with the budget's reason and a `retryDenied` event.
/// Reactor requeues (a token refresh) are not retries of the request and spend nothing.
///
/// The default is ``RatioRetryBudget`` (Finagle's numbers); `RequestQueue(retryBudget: nil)`
/// turns it off.
public protocol RetryBudget: Sendable {
    /// An operation's first attempt to `host` is about to be sent: the budget grows.
    func requestSent(to host: String)

    /// The retry policy wants to retry on `host`: `nil` if the budget allows it (and the
    /// retry is counted), else why not, for the operation's result and its events.
    func spendRetry(on host: String) -> String?

    /// Retries `host` may still be sent in the budget's window now; nil if the budget
    /// cannot tell. Published after each retry as `retryBudget` for the Hosts view.
    func retriesLeft(on host: String) -> Int?
}

extension RetryBudget {
    public func retriesLeft(on host: String) -> Int? { nil }
}

/// Retries to a host may be at most `percent` of its requests over the last `window`
/// seconds, plus `minRetriesPerSecond` × `window` (a floor, so a host with little traffic
/// can still be retried). Defaults: 20 %, 10 s, 10 a second — Finagle's `RetryBudget`
/// (Envoy: 20 % of active requests, at least 3; gRPC: a token bucket per server).
///
/// Requests and retries are counted in ten buckets per window, so they leave the window
/// within a tenth of it after their time. The clock is injectable for exact tests.
public final class RatioRetryBudget: RetryBudget {
    public struct Options: Sendable, Equatable {
        /// Share of the host's requests that may be retried (0.2: 20 %).
        public var percent: Double
        /// Seconds over which requests and retries are counted.
        public var window: TimeInterval
        /// Retries allowed each second on top of the share.
        public var minRetriesPerSecond: Double

        public init(percent: Double = 0.2, window: TimeInterval = 10, minRetriesPerSecond: Double = 10) {
            self.percent = max(0, percent)
            self.window = window.isFinite && window > 0 ? window : 10
            self.minRetriesPerSecond = max(0, minRetriesPerSecond)
        }

        /// "20 % of requests in 10 s, plus 10 a second", as the refusal says it.
        public var summary: String {
            let percentText = String(format: "%g", (percent * 100 * 10).rounded() / 10)
            return "\(percentText) % of requests in \(DurationText.format(window)), plus \(String(format: "%g", minRetriesPerSecond)) a second"
        }
    }

    /// What a host has spent and may spend now (for the Hosts view and tests).
    public struct Balance: Sendable, Equatable {
        public var requests: Int
        public var retries: Int
        /// Retries it may still send in the window (rounded down).
        public var left: Int
    }

    private static let bucketsPerWindow = 10

    private struct Bucket {
        var index = Int64.min
        var requests = 0
        var retries = 0
    }

    private struct Ledger {
        var buckets = [Bucket](repeating: Bucket(), count: RatioRetryBudget.bucketsPerWindow)
        var lastIndex = Int64.min

        mutating func bucket(_ index: Int64) -> Int {
            let slot = Int(((index % Int64(buckets.count)) + Int64(buckets.count)) % Int64(buckets.count))
            if buckets[slot].index != index { buckets[slot] = Bucket(index: index) }
            lastIndex = max(lastIndex, index)
            return slot
        }

        /// Counts a request (or a retry) in the bucket of `index`.
        mutating func count(at index: Int64, retry: Bool) {
            let slot = bucket(index)
            if retry { buckets[slot].retries += 1 } else { buckets[slot].requests += 1 }
        }

        func totals(at index: Int64) -> (requests: Int, retries: Int) {
            var requests = 0, retries = 0
            for bucket in buckets where bucket.index > index - Int64(buckets.count) && bucket.index <= index {
                requests += bucket.requests
                retries += bucket.retries
            }
            return (requests, retries)
        }
    }

    public let options: Options
    private let clock: RequestClock
    private let ledgers = Mutex<[String: Ledger]>([:])

    public init(options: Options = Options(), clock: RequestClock = SystemClock()) {
        self.options = options
        self.clock = clock
    }

    private func bucketIndex() -> Int64 {
        let width = options.window / Double(Self.bucketsPerWindow)
        let index = (clock.now() / width).rounded(.down)
        return index.isFinite ? Int64(max(Double(Int64.min / 2), min(Double(Int64.max / 2), index))) : 0
    }

    private func allowance(requests: Int) -> Double {
        options.percent * Double(requests) + options.minRetriesPerSecond * options.window
    }

    public func requestSent(to host: String) {
        let index = bucketIndex()
        ledgers.withLock { ledgers in
            if ledgers.count > 4_096 { Self.forgetIdle(&ledgers, at: index) }
            // Changed in place under one look-up (the host's string hashed once a request).
            ledgers[host, default: Ledger()].count(at: index, retry: false)
        }
    }

    public func spendRetry(on host: String) -> String? {
        let index = bucketIndex()
        return ledgers.withLock { ledgers -> String? in
            let totals = ledgers[host]?.totals(at: index) ?? (requests: 0, retries: 0)
            guard Double(totals.retries + 1) <= allowance(requests: totals.requests) else {
                return "retry budget for \(host) exhausted: \(options.summary)"
            }
            ledgers[host, default: Ledger()].count(at: index, retry: true)
            return nil
        }
    }

    /// The host's requests and retries in the window now, and what is left.
    public func balance(for host: String) -> Balance {
        let index = bucketIndex()
        let totals = ledgers.withLock { $0[host]?.totals(at: index) } ?? (requests: 0, retries: 0)
        let left = max(0, Int(allowance(requests: totals.requests).rounded(.down)) - totals.retries)
        return Balance(requests: totals.requests, retries: totals.retries, left: left)
    }

    public func retriesLeft(on host: String) -> Int? {
        balance(for: host).left
    }

    /// Hosts with nothing in the window are dropped (a process that talks to many hosts
    /// over days keeps only the recent ones).
    private static func forgetIdle(_ ledgers: inout [String: Ledger], at index: Int64) {
        ledgers = ledgers.filter { $0.value.lastIndex > index - Int64(bucketsPerWindow) }
    }
}
