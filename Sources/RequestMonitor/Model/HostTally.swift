import Foundation

/// One host's counts in ``QueueModel/hosts``, kept as events arrive: each row adds what it
/// is now (its ``Mark``) and takes back what it was before.
public struct HostTally: Sendable, Equatable {
    /// What one row contributes: its host, state, retries and whether a retry was refused.
    struct Mark: Equatable {
        var host: String
        var state: OperationRow.State
        var retries: Int
        var denied: Bool

        init(_ row: OperationRow) {
            host = row.host.isEmpty ? "(no host)" : row.host
            state = row.state
            retries = max(0, row.attempt - 1)
            denied = row.deniedRetry
        }
    }

    /// The key its circuit breaker goes by (`host:port`, the port always written), from the
    /// first row's URL.
    public internal(set) var key: String?
    public private(set) var operations = 0
    public private(set) var states: [OperationRow.State: Int] = [:]
    public private(set) var retries = 0
    public private(set) var denied = 0
    /// Durations of the operations that succeeded or failed, in seconds, in finishing order.
    public private(set) var durations: [TimeInterval] = []

    mutating func remove(_ mark: Mark) {
        operations -= 1
        states[mark.state, default: 0] -= 1
        retries -= mark.retries
        if mark.denied { denied -= 1 }
    }

    mutating func add(_ mark: Mark, finishedIn duration: TimeInterval?) {
        operations += 1
        states[mark.state, default: 0] += 1
        retries += mark.retries
        if mark.denied { denied += 1 }
        if let duration, mark.state == .succeeded || mark.state == .failed { durations.append(duration) }
    }
}
