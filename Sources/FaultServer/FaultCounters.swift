import Foundation
import Synchronization

/// What the fault server has seen: hits per path, and the state of flaky routes.
///
/// Shared by a server and, when a test restarts a server on the same port, by its
/// successor, so a flaky route's count survives the restart.
public final class FaultCounters: Sendable {
    private struct State {
        var hitsByPath: [String: Int] = [:]
        var headsByPath: [String: Int] = [:]
        /// The last requests per path (method and body), for tests that check what arrived.
        var requestsByPath: [String: [ReceivedRequest]] = [:]
        var total = 0
        var flakyHits: [String: Int] = [:]
        var tokensIssued = 0
        /// Each user's current token: a new one replaces only that user's last.
        var tokens: [String: (value: String, expiresAt: Date)] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Requests received for `path` (without its query).
    public func hits(_ path: String) -> Int {
        state.withLock { $0.hitsByPath[path, default: 0] }
    }

    /// Request heads received for `path`, complete or not: more heads than ``hits(_:)``
    /// means a request arrived without all of its body.
    public func heads(_ path: String) -> Int {
        state.withLock { $0.headsByPath[path, default: 0] }
    }

    /// A request as it arrived: its method, target (path and query), headers (lower-case
    /// names) and body.
    public struct ReceivedRequest: Sendable, Equatable {
        public var method: String
        public var uri: String
        public var headers: [String: String]
        public var body: Data
    }

    /// The last 100 requests received for `path`, oldest first.
    public func requests(_ path: String) -> [ReceivedRequest] {
        state.withLock { $0.requestsByPath[path, default: []] }
    }

    /// Requests received in all.
    public var totalHits: Int {
        state.withLock { $0.total }
    }

    /// Forgets every count.
    public func reset() {
        state.withLock { $0 = State() }
    }

    func recordHead(_ path: String) {
        state.withLock { $0.headsByPath[path, default: 0] += 1 }
    }

    func recordHit(_ path: String, _ request: ReceivedRequest) {
        state.withLock { state in
            state.hitsByPath[path, default: 0] += 1
            state.total += 1
            state.requestsByPath[path, default: []].append(request)
            if state.requestsByPath[path, default: []].count > 100 { state.requestsByPath[path]?.removeFirst() }
        }
    }

    /// Tokens the token route has issued.
    public var tokensIssued: Int {
        state.withLock { $0.tokensIssued }
    }

    /// The token the protected routes accept now for `user`, if any.
    public func currentToken(of user: String) -> String? {
        state.withLock { state in state.tokens[user].flatMap { $0.expiresAt > Date() ? $0.value : nil } }
    }

    /// Makes every current token invalid, as if they had expired.
    public func expireToken() {
        state.withLock { $0.tokens = [:] }
    }

    /// Issues a new token for `user`, replacing that user's last one.
    func issueToken(user: String, ttl: Double) -> String {
        state.withLock { state in
            state.tokensIssued += 1
            let value = "tok-\(state.tokensIssued)"
            state.tokens[user] = (value, Date().addingTimeInterval(ttl))
            return value
        }
    }

    /// The user of `token` if it is that user's current one and has not expired.
    func user(of token: String) -> String? {
        state.withLock { state in
            state.tokens.first { $0.value.value == token && $0.value.expiresAt > Date() }?.key
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
