import Foundation

/// A failure to inject into the requests a match picks, at the transport seam: the engine's
/// retry policy, budget, breaker and events then meet it as they would a real one, and every
/// injected attempt says so in its events (`injected`).
public struct FaultRule: Sendable, Equatable {
    /// What happens to a picked attempt (one effect per rule).
    public enum Effect: Sendable, Equatable {
        /// Answered with this status (and `Retry-After` when given) without being sent.
        case status(Int, retryAfter: TimeInterval?)
        /// Sent after a pause drawn from this range (seconds).
        case delay(ClosedRange<TimeInterval>)
        /// The connection reset before any answer (-1005).
        case reset
        /// No answer at all: the attempt's read or attempt timeout ends it.
        case stall
        /// The answer cut after this many bytes of its body, the connection then lost (-1005).
        case truncate(afterBytes: Int)
        /// Answered with this status, headers and body without being sent (a breakpoint's mock).
        case respond(status: Int, headers: [String: String], body: Data)
        /// Failed with this transport error without being sent (a breakpoint's "fail").
        case fail(URLError.Code)

        /// In words, for events and the monitor (`status 503`, `delay 0.2–1.5 s`).
        public var summary: String {
            switch self {
            case .status(let status, let retryAfter): "status \(status)" + (retryAfter.map { " (Retry-After \(DurationText.format($0)))" } ?? "")
            case .delay(let range):
                range.lowerBound == range.upperBound ? "delay \(DurationText.format(range.lowerBound))"
                    : "delay \(DurationText.format(range.lowerBound))–\(DurationText.format(range.upperBound))"
            case .reset: "reset"
            case .stall: "stall"
            case .truncate(let bytes): "truncate after \(bytes) bytes"
            case .respond(let status, _, let body): "answer \(status) (\(body.count) bytes)"
            case .fail(let code): "fail \(code.rawValue)"
            }
        }
    }

    /// Which requests (``RequestMatch``).
    public var match: RequestMatch
    public var effect: Effect
    /// The share of picked attempts it applies to, 0–1 (1: every one).
    public var rate: Double
    /// Who set it (`plan`, `library`, `monitor`), for the events.
    public var setBy: String

    public init(match: RequestMatch, effect: Effect, rate: Double = 1, setBy: String = "library") {
        self.match = match
        self.effect = effect
        self.rate = min(1, max(0, rate))
        self.setBy = setBy
    }
}
