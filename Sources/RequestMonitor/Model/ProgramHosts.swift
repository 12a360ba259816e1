import Foundation
import RequestOperations

/// A merged view's hosts split by program (`P` on the Hosts screen): the same tallies and
/// host-level marks as the model keeps per host, one set per host and program, keyed
/// `pid/host` as the merged view's ids are (`4121/api.example.com`). Each program has its
/// own breaker, budget and pause for a host; merged, the latest program's would stand for all.
public struct ProgramHosts: Sendable {
    public internal(set) var hosts: [String: HostTally] = [:]
    public internal(set) var circuits: [String: CircuitMark] = [:]
    public internal(set) var rateLimitedUntil: [String: TimeInterval] = [:]
    public internal(set) var retryBudgetLeft: [String: Int] = [:]
    public internal(set) var injected: [String: Int] = [:]

    /// No event named a program: not a merged view.
    public var isEmpty: Bool { hosts.isEmpty && circuits.isEmpty }

    /// `4121/` for the program `reqtop demo 4121` (its label ends with its pid).
    static func prefix(of program: String) -> String {
        (program.split(separator: " ").last.map(String.init) ?? program) + "/"
    }

    /// A host-level event (`op` empty) of `program`.
    mutating func applyHostLevel(_ event: RequestEvent, program: String) {
        let prefix = Self.prefix(of: program)
        if case .rateLimited(let host, let until, _) = event.payload { rateLimitedUntil[prefix + host] = until }
        if case .retryBudget(let host, let left) = event.payload { retryBudgetLeft[prefix + host] = left }
        if let (host, mark) = CircuitMark.from(event) { circuits[prefix + host] = mark }
    }

    /// A row of `program` moved from `old` to `new` (as ``QueueModel`` moves its host tallies).
    mutating func move(_ old: HostTally.Mark?, to new: HostTally.Mark, finishedIn duration: TimeInterval?, url: String, program: String) {
        let prefix = Self.prefix(of: program)
        if let old { hosts[prefix + old.host, default: HostTally()].remove(old) }
        hosts[prefix + new.host, default: HostTally()].add(new, finishedIn: duration)
        if hosts[prefix + new.host]?.key == nil { hosts[prefix + new.host]?.key = CircuitMark.breakerKey(url: url).map { prefix + $0 } }
    }
}
