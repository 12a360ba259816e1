import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Adapts a request before it is sent, and says what happens to it next.
///
/// Interceptors run as an ordered chain (``RequestOptions/interceptors``) at the start of
/// every attempt, before the attempt takes a concurrency slot, so a request held in a batch
/// or waiting for a token holds no slot. Each one is published as an `intercepted` event
/// (`by`, `command`).
///
/// Throwing ends the operation as a failure with ``RequestError/Reason/interceptor(name:message:)``;
/// the retry policy is not asked (an interceptor that cannot sign a request will not sign it
/// a second later either).
///
/// Default: no interceptors; the request goes out as built.
public protocol RequestInterceptor: Sendable {
    /// Names the interceptor in events and errors.
    var name: String { get }

    /// The request to go on with, and what to do with it.
    func intercept(_ request: URLRequest, context: InterceptionContext) async throws -> Interception
}

/// What an interceptor knows about the operation it adapts a request for.
public struct InterceptionContext: Sendable {
    public var operationID: String
    /// The attempt about to be sent, from 1.
    public var attempt: Int
    public var userInfo: [String: String]
    public var clock: RequestClock
    /// Waits for a reactor run the way the operation waits for one itself (shown as held by
    /// it, with `reactorWaiting` and `reactorFinished`).
    let waitForReactor: @Sendable (RequestReactor, UInt64) async -> RequestError.Reason?

    /// A context for calling an interceptor by hand (a test, say): reactor runs are waited for plainly.
    public init(operationID: String, attempt: Int, userInfo: [String: String] = [:], clock: RequestClock) {
        self.init(operationID: operationID, attempt: attempt, userInfo: userInfo, clock: clock) { await $0.outcome(of: $1) }
    }

    init(operationID: String, attempt: Int, userInfo: [String: String], clock: RequestClock,
         waitForReactor: @escaping @Sendable (RequestReactor, UInt64) async -> RequestError.Reason?) {
        self.operationID = operationID
        self.attempt = attempt
        self.userInfo = userInfo
        self.clock = clock
        self.waitForReactor = waitForReactor
    }

    /// Waits for a reactor run (a login, say), showing the operation as held by it meanwhile.
    /// Returns the run's error, or nil when it succeeded.
    func wait(for reactor: RequestReactor, run: UInt64) async -> RequestError.Reason? {
        await waitForReactor(reactor, run)
    }
}

/// An interceptor's answer: the (possibly adapted) request and a command.
public struct Interception: Sendable {
    public var request: URLRequest
    public var command: InterceptorCommand

    public init(_ request: URLRequest, _ command: InterceptorCommand = .execute) {
        self.request = request
        self.command = command
    }
}

/// What happens after an interceptor.
public enum InterceptorCommand: Sendable {
    /// Go on to the next interceptor, then send.
    case execute
    /// Wait in `batch` until it is released, then go on to the next interceptor.
    case hold(RequestBatch)
    /// Do not send it: the operation ends as cancelled, `by` this interceptor.
    case discard(reason: String)
    /// Send it now, skipping the rest of the chain.
    case forceExecute

    /// The `command` field of the `intercepted` event.
    public var name: String {
        switch self {
        case .execute: "execute"
        case .hold: "hold"
        case .discard: "discard"
        case .forceExecute: "forceExecute"
        }
    }
}

/// An interceptor from a closure.
public struct ClosureInterceptor: RequestInterceptor {
    public let name: String
    public let body: @Sendable (URLRequest, InterceptionContext) async throws -> Interception

    public init(name: String, _ body: @escaping @Sendable (URLRequest, InterceptionContext) async throws -> Interception) {
        self.name = name
        self.body = body
    }

    public func intercept(_ request: URLRequest, context: InterceptionContext) async throws -> Interception {
        try await body(request, context)
    }
}

/// Holds requests in one batch: their first attempt only, by default, so a retry or a
/// request sent again after a token refresh is not held a second time.
public struct BatchingInterceptor: RequestInterceptor {
    public let batch: RequestBatch
    /// Hold every attempt, not only the first.
    public let everyAttempt: Bool

    public init(batch: RequestBatch, everyAttempt: Bool = false) {
        self.batch = batch
        self.everyAttempt = everyAttempt
    }

    public var name: String { "batch:\(batch.name)" }

    public func intercept(_ request: URLRequest, context: InterceptionContext) async throws -> Interception {
        Interception(request, everyAttempt || context.attempt == 1 ? .hold(batch) : .execute)
    }
}

/// How a reactor's run ended, as the `reactorFinished` event's `outcome` says it: `success`,
/// or the error's words.
public enum ReactorOutcome: Sendable, Equatable, ExpressibleByStringLiteral, CustomStringConvertible {
    case success
    case failure(String)

    /// From the event's `outcome` field.
    public init(wire text: String) {
        self = text == "success" ? .success : .failure(text)
    }

    public init(stringLiteral value: String) {
        self.init(wire: value)
    }

    /// The `outcome` field's text.
    public var description: String {
        switch self {
        case .success: "success"
        case .failure(let why): why
        }
    }
}
