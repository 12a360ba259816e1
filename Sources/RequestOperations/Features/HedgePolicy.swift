import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Hedged reads: when an idempotent request has had no response for ``after`` seconds, the
/// same request is sent again alongside it (a new attempt, on another connection — the
/// first is busy), up to ``max`` extra copies; the first response wins and the others are
/// cancelled (`taskCompleted` error -999 "cancelled by hedge …"). It cuts the tail latency a
/// slow server or a stuck connection adds, at the price of extra requests — which is why it
/// is off by default and why each hedge spends the host's retry budget (a host that is
/// failing gets no hedges once the budget is spent).
///
/// A hedge is sent only when all of these hold: the method is idempotent (GET, HEAD,
/// OPTIONS, TRACE, PUT, DELETE, or any method with an `Idempotency-Key`), the attempt has no
/// response yet, the retry policy's attempt limit leaves room, the host's circuit breaker is
/// closed and no rate-limit pause is on, and the retry budget allows it. A hedge shares the
/// attempt's concurrency slot (waiting for a slot of its own would defeat its purpose).
///
/// Like gRPC's hedging policy (gRFC A6): hedges are attempts, counted in the attempt limit;
/// what the first response says (success or failure) is the attempt's result.
public struct HedgePolicy: Sendable, Equatable {
    /// Seconds without a response before each hedge is sent (the second copy after `after`,
    /// the third after `2 × after`, ...).
    public var after: TimeInterval
    /// Extra copies at most (1: one hedge).
    public var max: Int

    public init(after: TimeInterval, max: Int = 1) {
        self.after = Swift.max(0.001, after)
        self.max = Swift.max(0, max)
    }

    /// `options.hedge = .hedge(after: 0.2, max: 1)`.
    public static func hedge(after: TimeInterval, max: Int = 1) -> HedgePolicy {
        HedgePolicy(after: after, max: max)
    }

    /// Whether `request` may be hedged at all: its method is idempotent, or it carries an
    /// `Idempotency-Key`. Sending a POST twice could act twice.
    public static func allows(_ request: URLRequest) -> Bool {
        allows(RequestMessage(request))
    }

    /// The same; and a body that is a stream (read once) is never sent twice.
    public static func allows(_ request: RequestMessage) -> Bool {
        if request.body.stream != nil { return false }
        return ExponentialBackoffRetryPolicy.defaultRetryableMethods.contains(request.method.uppercased())
            || request.value(forField: "Idempotency-Key") != nil
    }
}

extension TransportError {
    /// The error a hedged attempt's task ends with when another attempt answered first.
    public static func hedgeLost(to winner: Int) -> TransportError {
        TransportError(code: URLError.Code.cancelled.rawValue, message: "cancelled by hedge: attempt \(winner) answered first", cancelledByHedge: true)
    }

    /// The error a hedge still in flight ends with when its attempt ended another way.
    public static func hedgeEnded(with lead: Int) -> TransportError {
        TransportError(code: URLError.Code.cancelled.rawValue, message: "cancelled by hedge: attempt \(lead) ended", cancelledByHedge: true)
    }

    /// A hedged copy that was cancelled because another one answered or ended first: not the
    /// operation's error. Carried by the error (`hedge` in its object), not read from words.
    public var isHedgeCancellation: Bool { cancelledByHedge }
}
