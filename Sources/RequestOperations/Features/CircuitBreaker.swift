import Foundation
import Synchronization

/// Stops sending to a host that is failing, lets one probe through after a while, and lets
/// everything through again once the probe succeeds — so a service that loses an upstream
/// stops adding to its trouble, and its requests wait without a slot instead of failing.
///
/// The engine asks ``admit(_:whenReady:)`` before an attempt takes a slot and tells the
/// pass how the attempt went (``CircuitPass/record(_:)``); an attempt that ends without an
/// answer of either kind (cancelled, never sent) gives its pass back unused.
///
/// The default is ``HostCircuitBreaker`` (per host; opens on a failure ratio or consecutive
/// connection failures, half-open probes, doubling open time). `RequestQueue(circuitBreaker: nil)`
/// turns breakers off.
public protocol CircuitBreaker: Sendable {
    /// May an attempt to `host` be sent now? `whenReady` is called (once, on any thread)
    /// when a ``CircuitAdmission/wait(_:until:)`` is over: ask again then.
    func admit(_ host: String, whenReady: @escaping @Sendable () -> Void) -> CircuitAdmission

    /// Forces the breaker of `host` open until ``close(_:by:)`` (a person isolating a host).
    func isolate(_ host: String, by who: String)

    /// Closes the breaker of `host` (after an isolation, or to stop waiting out an open one).
    /// False if it was closed already.
    @discardableResult
    func close(_ host: String, by who: String) -> Bool

    /// The breaker's state for each host it knows.
    func states() -> [String: CircuitState]

    /// Whether the breaker of `host` is closed (everything may be sent). Asked before a
    /// hedge: a copy is not sent to a host in trouble.
    func isClosed(_ host: String) -> Bool

    /// The longest an attempt waits for a breaker before its operation fails (nil: as long
    /// as its deadline allows). An operation without a deadline must not wait forever for a
    /// host that never comes back.
    var maxWait: TimeInterval? { get }
}

extension CircuitBreaker {
    public func isClosed(_ host: String) -> Bool {
        (states()[host] ?? .closed) == .closed
    }
}

/// What ``CircuitBreaker/admit(_:whenReady:)`` answers.
public enum CircuitAdmission: Sendable {
    /// Send; tell the pass how it went.
    case send(CircuitPass)
    /// Do not send yet: the breaker is open (or half-open with its probe out). Cancel the
    /// wait when the operation ends first.
    case wait(CircuitWait, until: TimeInterval?)
    /// Do not send at all: the breaker is open and fails fast (`reason` says so).
    case refuse(reason: String)
}

/// How an admitted attempt went, as a breaker counts it.
public enum CircuitVerdict: Sendable, Equatable {
    /// The host answered with a status that is not a failure (2xx, 3xx, 4xx but 408/429).
    case success
    /// 5xx, 408 or 429: the host answered that it is in trouble.
    case failedStatus(Int)
    /// No answer: the connection failed, was lost, or the attempt timed out.
    case failedConnection(String)
}

/// A breaker's state for one host.
public enum CircuitState: Sendable, Equatable {
    case closed
    /// Not sending until `until` (nil: isolated by hand, until closed by hand).
    case open(until: TimeInterval?, reason: String)
    /// One probe is allowed through (or is out).
    case halfOpen
}

/// One admitted attempt's word back to its breaker. Recorded or given back once; later
/// calls do nothing, so the engine may give back a pass that was already recorded.
public final class CircuitPass: Sendable {
    private let spent = Mutex(false)
    private let report: @Sendable (CircuitVerdict?) -> Void
    /// The attempt is the half-open breaker's one probe.
    public let isProbe: Bool

    public init(isProbe: Bool, report: @escaping @Sendable (CircuitVerdict?) -> Void) {
        self.isProbe = isProbe
        self.report = report
    }

    /// How the attempt went.
    public func record(_ verdict: CircuitVerdict) {
        take()?(verdict)
    }

    /// The attempt ended without an answer the breaker judges (cancelled, never sent).
    public func giveBack() {
        take()?(nil)
    }

    private func take() -> (@Sendable (CircuitVerdict?) -> Void)? {
        let first = spent.withLock { spent in
            defer { spent = true }
            return !spent
        }
        return first ? report : nil
    }
}

/// A wait for a breaker; ``cancel()`` when the operation ends before it is over.
public struct CircuitWait: Sendable {
    private let onCancel: @Sendable () -> Void

    public init(onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = onCancel
    }

    public func cancel() {
        onCancel()
    }
}

extension CircuitVerdict {
    /// How an attempt that got `status` (nil: no answer) or failed with `failure` counts.
    /// Nil: it does not count (cancelled, or the request was never sent).
    static func judging(status: Int?, failure: AttemptFailure?) -> CircuitVerdict? {
        switch failure {
        case .transport(let code)?:
            return code == .cancelled ? nil : .failedConnection(TransportError.describe(code))
        case .preparation?:
            return nil
        case .status, .validation, nil:
            guard let status else { return nil }
            return status >= 500 || status == 408 || status == 429 ? .failedStatus(status) : .success
        }
    }
}
