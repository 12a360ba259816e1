import Synchronization

/// A few values remembered for a short while, by key: a shortcut, never the only way to an
/// answer (``ClientProgram``'s sockets seen on the way to another, and programs' names). A value
/// older than `lifetime` is not given; when `capacity` is reached the table starts again empty,
/// rather than being sifted at every put. Behind a lock: lookups run on every event loop at once.
final class ShortMemory<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let entries = Mutex<[Key: (value: Value, at: ContinuousClock.Instant)]>([:])
    private let lifetime: Duration
    private let capacity: Int

    init(lifetime: Duration, capacity: Int) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// The value put for `key` less than `lifetime` before `now`; `taking` forgets it.
    func value(for key: Key, taking: Bool = false, now: ContinuousClock.Instant = .now) -> Value? {
        let entry = entries.withLock { taking ? $0.removeValue(forKey: key) : $0[key] }
        guard let entry, entry.at.duration(to: now) < lifetime else { return nil }
        return entry.value
    }

    func put(_ value: Value, for key: Key, now: ContinuousClock.Instant = .now) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = (value, now)
        }
    }
}
