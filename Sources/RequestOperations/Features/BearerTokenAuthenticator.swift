import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// Bearer-token authentication from an interceptor and a reactor:
/// - ``interceptor`` adds `Authorization: Bearer <current token>` to every attempt (and,
///   when there is no token yet, runs the refresh first);
/// - ``reactor`` refreshes the token on a 401, once for every request that gets one while
///   the refresh runs. Requests made meanwhile wait, then go out with the new token. A 401
///   for a request sent with a token that has since been replaced is sent again at once,
///   without another refresh. A failed refresh fails every waiting request with its error.
///
/// The refresh itself (``TokenRefresher``) runs outside both, so it never waits for itself.
///
/// ```swift
/// let auth = BearerTokenAuthenticator(refresher: TokenEndpoint(
///     url: tokenURL, credentials: ["username": "demo", "password": "secret"], queue: queue))
/// var options = RequestOptions()
/// auth.install(on: &options)
/// queue.add(URLRequest(url: protectedURL), options: options)
/// ```
public final class BearerTokenAuthenticator: Sendable {
    public let name: String
    public let reactor: RequestReactor
    private let store: TokenStore

    /// - Parameters:
    ///   - token: a token to start with; `nil` fetches one before the first request.
    ///   - options: the reactor's options (defaults: requeue, hold new requests, re-run
    ///     interceptors, 30 s limit, at most 3 refreshes a minute).
    public init(name: String = "auth", token: String? = nil, refresher: TokenRefresher,
                options: RequestReactor.Options = RequestReactor.Options(), clock: RequestClock = SystemClock()) {
        let store = TokenStore(token)
        self.name = name
        self.store = store
        reactor = RequestReactor(name: name, options: options, clock: clock,
                                 handler: TokenRefreshHandler(store: store, refresher: refresher))
    }

    /// The token requests are sent with now.
    public var currentToken: String? { store.token }

    /// The interceptor that adds the current token.
    public var interceptor: RequestInterceptor { BearerTokenInterceptor(name: name, store: store, reactor: reactor) }

    /// Adds ``interceptor`` (last in the chain, so it signs what the others built) and ``reactor``.
    public func install(on options: inout RequestOptions) {
        options.interceptors.append(interceptor)
        options.reactors.append(reactor)
    }

    /// The token in an `Authorization: Bearer` header, if any.
    static func bearerToken(of request: URLRequest) -> String? {
        guard let value = request.value(forHTTPHeaderField: "Authorization"), value.hasPrefix("Bearer ") else { return nil }
        return String(value.dropFirst("Bearer ".count))
    }
}

/// The current token, shared by the interceptor and the refresh.
final class TokenStore: Sendable {
    private let value: Mutex<String?>

    init(_ token: String?) {
        value = Mutex(token)
    }

    var token: String? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

struct BearerTokenInterceptor: RequestInterceptor {
    let name: String
    let store: TokenStore
    let reactor: RequestReactor

    func intercept(_ request: URLRequest, context: InterceptionContext) async throws -> Interception {
        var token = store.token
        if token == nil {
            // No token yet: log in first, through the reactor, so that many first requests
            // share one login.
            let run: UInt64
            switch reactor.enter(trigger: "no token") {
            case .started(let started), .joined(let started): run = started
            case .refused(let error): throw error
            }
            if let error = await context.wait(for: reactor, run: run) { throw error }
            token = store.token
        }
        guard let token else { throw RequestError.Reason.reactor(name: name, message: "the refresh gave no token") }
        var signed = request
        signed.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        return Interception(signed)
    }
}

struct TokenRefreshHandler: ReactorHandler {
    let store: TokenStore
    let refresher: TokenRefresher

    func decide(_ input: ReactorInput) -> ReactorDecision {
        guard input.status == 401 else { return .ignore }
        if let current = store.token, let sent = BearerTokenAuthenticator.bearerToken(of: input.request), sent != current {
            return .requeue(reason: "401 for an older token; sending again with the current one")
        }
        return .react(trigger: "status 401")
    }

    func run(trigger: String) async throws {
        store.token = try await refresher.refresh(current: store.token)
    }
}

/// Fetches a new token.
public protocol TokenRefresher: Sendable {
    /// A new token; `current` is the one that was rejected (nil before the first).
    func refresh(current: String?) async throws -> String
}

/// A refresher from a closure.
public struct ClosureTokenRefresher: TokenRefresher {
    public let body: @Sendable (String?) async throws -> String

    public init(_ body: @escaping @Sendable (String?) async throws -> String) {
        self.body = body
    }

    public func refresh(current: String?) async throws -> String {
        try await body(current)
    }
}
