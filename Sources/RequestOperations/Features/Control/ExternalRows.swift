import Synchronization

/// Rows a queue's events show that are not its operations — a proxy's tunnels, which carry
/// bytes, not requests — each with how to cancel it, so a person's cancel (`X`, and cancel
/// all) reaches them as it reaches an operation (``QueueControl``), live and attached.
///
/// Whoever publishes such a row adds it here when it opens and removes it when it ends.
public final class ExternalRows: Sendable {
    /// Ends the row, cancelled `by` someone (the monitor): from any thread, once.
    public typealias Cancel = @Sendable (_ by: String) -> Void

    private let rows = Mutex<[String: Cancel]>([:])

    public init() {}

    /// Row `id` is open until ``remove(_:)``.
    public func add(_ id: String, cancel: @escaping Cancel) {
        rows.withLock { $0[id] = cancel }
    }

    public func remove(_ id: String) {
        _ = rows.withLock { $0.removeValue(forKey: id) }
    }

    /// Cancels row `id` (outside the lock); false when there is none open.
    @discardableResult
    public func cancel(_ id: String, by who: String) -> Bool {
        guard let cancel = rows.withLock({ $0.removeValue(forKey: id) }) else { return false }
        cancel(who)
        return true
    }

    /// Cancels every row open now; returns how many.
    @discardableResult
    public func cancelAll(by who: String) -> Int {
        let all = rows.withLock { rows in
            defer { rows = [:] }
            return Array(rows.values)
        }
        all.forEach { $0(who) }
        return all.count
    }
}
