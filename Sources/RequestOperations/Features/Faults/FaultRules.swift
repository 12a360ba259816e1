import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// A queue's injected faults (`queue.faults`): add, list, remove, clear, while it runs.
/// Asked once per attempt, before it is sent; with no rule it costs one atomic read.
///
/// ```swift
/// let id = queue.faults.add(FaultRule(match: try RequestMatch("host:api.example.com path:/v1"),
///                                     effect: .status(503, retryAfter: 2), rate: 0.3))
/// queue.faults.remove(id)
/// ```
public final class FaultRules: Sendable {
    /// A rule with the number it was given.
    public struct Entry: Sendable, Equatable {
        public let id: Int
        public let rule: FaultRule
    }

    private let entries = Mutex<(next: Int, list: [Entry])>((1, []))
    private let count = Atomic<Int>(0)
    private let random: RandomSource

    public init(random: RandomSource = SystemRandomSource()) {
        self.random = random
    }

    /// Adds `rule`; returns its number.
    @discardableResult
    public func add(_ rule: FaultRule) -> Int {
        entries.withLock { entries in
            let id = entries.next
            entries.next += 1
            entries.list.append(Entry(id: id, rule: rule))
            count.store(entries.list.count, ordering: .releasing)
            return id
        }
    }

    /// Removes rule `id`; false when there is none.
    @discardableResult
    public func remove(_ id: Int) -> Bool {
        entries.withLock { entries in
            let before = entries.list.count
            entries.list.removeAll { $0.id == id }
            count.store(entries.list.count, ordering: .releasing)
            return entries.list.count < before
        }
    }

    /// Removes every rule; returns how many there were.
    @discardableResult
    public func removeAll() -> Int {
        entries.withLock { entries in
            defer { entries.list = [] }
            count.store(0, ordering: .releasing)
            return entries.list.count
        }
    }

    public var list: [Entry] { entries.withLock { $0.list } }

    /// Whether any rule is set (the monitor's `FAULTS ON`).
    public var isActive: Bool { count.load(ordering: .acquiring) > 0 }

    /// The first rule whose match holds for `request` and whose rate's draw falls in; nil
    /// for most requests, and at once when there is no rule.
    func pick(for request: RequestMessage) -> FaultRule? {
        guard isActive else { return nil }
        let rules = entries.withLock { $0.list }
        for entry in rules where entry.rule.match.matches(request) {
            if entry.rule.rate >= 1 || random.nextUnit() < entry.rule.rate { return entry.rule }
        }
        return nil
    }

    /// A draw in `range`, for a delay.
    func draw(_ range: ClosedRange<TimeInterval>) -> TimeInterval {
        random.uniform(range.lowerBound, range.upperBound)
    }
}
