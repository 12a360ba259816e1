import Synchronization

/// What the fault server has seen: hits per path, and the state of flaky routes.
///
/// Shared by a server and, when a test restarts a server on the same port, by its
/// successor, so a flaky route's count survives the restart.
public final class FaultCounters: Sendable {
    private struct State {
        var hitsByPath: [String: Int] = [:]
        var total = 0
        var flakyHits: [String: Int] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Requests received for `path` (without its query).
    public func hits(_ path: String) -> Int {
        state.withLock { $0.hitsByPath[path, default: 0] }
    }

    /// Requests received in all.
    public var totalHits: Int {
        state.withLock { $0.total }
    }

    /// Forgets every count.
    public func reset() {
        state.withLock { $0 = State() }
    }

    func recordHit(_ path: String) {
        state.withLock { state in
            state.hitsByPath[path, default: 0] += 1
            state.total += 1
        }
    }

    /// Counts a hit on flaky route `key` and returns its number, from 1.
    func nextFlakyHit(_ key: String) -> Int {
        state.withLock { state in
            state.flakyHits[key, default: 0] += 1
            return state.flakyHits[key, default: 0]
        }
    }
}
