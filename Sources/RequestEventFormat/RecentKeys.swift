/// The last `limit` keys added, oldest first: the order a bounded memory forgets in (a proxy's
/// session runs for days, so what it remembers of each operation must not grow with them).
/// Adding a key past the limit gives back the oldest, for the caller to forget. O(1) amortised:
/// the array is compacted once `limit` keys have been dropped from its front.
package struct RecentKeys<Key: Hashable>: Equatable {
    package let limit: Int
    private var keys: [Key] = []
    private var start = 0

    package init(limit: Int) {
        self.limit = limit
    }

    /// Adds `key` as the newest; returns the oldest when that made one too many.
    package mutating func append(_ key: Key) -> Key? {
        keys.append(key)
        guard keys.count - start > limit else { return nil }
        let oldest = keys[start]
        start += 1
        if start >= limit {
            keys.removeFirst(start)
            start = 0
        }
        return oldest
    }

    package var count: Int { keys.count - start }
}

extension RecentKeys: Sendable where Key: Sendable {}
