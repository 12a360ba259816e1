import Foundation
import Synchronization

/// Makes a host's "slow down" apply to every request to it, not only to the one it answered:
/// the engine shows each response to ``observe(_:status:header:)``, and before an attempt
/// takes a slot asks ``waitUntil(_:)``; an attempt to a host that asked for a pause waits,
/// without a slot (WAIT `rate limit`), until the pause is over.
///
/// The default is ``HostRateLimits``; `RequestQueue(rateLimits: nil)` turns it off (then
/// only the request that got a `Retry-After` waits for it, through its retry policy).
public protocol RateLimitPushback: Sendable {
    /// A response from `host` (`host:port`) arrived; `header` looks a header up by name
    /// (any case). Called for every response: look up only what you need.
    func observe(_ host: String, status: Int, header: (String) -> String?)
    /// Until when (clock time) attempts to `host` must wait, and why; nil: no pause now.
    func waitUntil(_ host: String) -> (until: TimeInterval, reason: String)?
}

/// Pauses a host when it says so, by any of the headers throttling servers send:
/// - `Retry-After` (seconds or an HTTP date) on a 429 or 503 (RFC 9110; AWS, most APIs);
/// - `RateLimit: "name";r=0;t=30` or the older `RateLimit-Remaining: 0` + `RateLimit-Reset: 30`
///   (the IETF httpapi draft; `RateLimit-Policy` only describes the quota and pauses nothing);
/// - `X-RateLimit-Remaining: 0` + `X-RateLimit-Reset: N` (GitHub, Twitter and many more; N is
///   seconds from now, or a Unix time when it is past 2001-09-09, as GitHub's is).
///
/// A pause longer than `maxPause` (300 s) is not applied to the host at all: a server that
/// asks every client to stay away longer (`Retry-After: 9223372036854775807`) is as likely
/// broken or hostile as honest, and holding every request for minutes on its word would
/// make one bad answer stop a service. The request it answered still ends by its own retry
/// policy. Each new or longer pause is a host-level `rateLimited` event (`host`, `until`,
/// `reason`).
public final class HostRateLimits: RateLimitPushback {
    public let maxPause: TimeInterval
    private let clock: RequestClock
    private let events: EventHub?
    private let wallClock: @Sendable () -> Date
    private let pauses = Mutex<[String: (until: TimeInterval, reason: String)]>([:])

    public init(maxPause: TimeInterval = 300, clock: RequestClock = SystemClock(), events: EventHub? = nil,
                wallClock: @escaping @Sendable () -> Date = { Date() }) {
        self.maxPause = maxPause.isFinite && maxPause > 0 ? maxPause : 300
        self.clock = clock
        self.events = events
        self.wallClock = wallClock
    }

    public func observe(_ host: String, status: Int, header: (String) -> String?) {
        guard let (delay, reason) = Self.pause(status: status, header: header, now: wallClock()), delay > 0,
              delay <= maxPause else { return }
        let now = clock.now()
        let until = now + delay
        let longer = pauses.withLock { pauses -> Bool in
            if let current = pauses[host], current.until >= until - 0.05 { return false }
            if pauses.count > 4_096 { pauses = pauses.filter { $0.value.until > now } }
            pauses[host] = (until, reason)
            return true
        }
        if longer, let events {
            events.publish(operation: "", attempt: 0, .rateLimited(host: host, until: events.elapsed() + (until - now), reason: reason))
        }
    }

    public func waitUntil(_ host: String) -> (until: TimeInterval, reason: String)? {
        // Asked before every attempt, and almost always with no host paused: nothing hashed
        // and no clock read then (#58).
        pauses.withLock { pauses in
            guard !pauses.isEmpty, let pause = pauses[host] else { return nil }
            guard pause.until > clock.now() else {
                pauses[host] = nil
                return nil
            }
            return pause
        }
    }

    /// The pause a response with `headers` asks for (seconds from now) and the header that asked.
    static func pause(status: Int, headers: [String: String], now: Date) -> (TimeInterval, String)? {
        var lower: [String: String] = [:]
        for (name, value) in headers { lower[name.lowercased()] = value }
        return pause(status: status, header: { lower[$0.lowercased()] }, now: now)
    }

    /// The same, looking headers up one by one (a healthy answer costs three lookups).
    static func pause(status: Int, header: (String) -> String?, now: Date) -> (TimeInterval, String)? {
        if status == 429 || status == 503, let value = header("Retry-After"), let delay = RetryAfter.delay(from: value, now: now) {
            return (delay, "\(status) with Retry-After: \(value)")
        }
        if let value = header("RateLimit"), let (remaining, reset) = structuredLimit(value), remaining <= 0 {
            return (reset, "RateLimit: \(value)")
        }
        for name in ["RateLimit", "X-RateLimit"] {
            guard let remaining = header(name + "-Remaining").flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) }),
                  remaining <= 0, let resetText = header(name + "-Reset"),
                  let reset = Double(resetText.trimmingCharacters(in: .whitespaces)), reset.isFinite, reset >= 0 else { continue }
            // A Unix time (GitHub) or seconds from now (most others): no quota resets 31 years out.
            let delay = reset > 1_000_000_000 ? reset - now.timeIntervalSince1970 : reset
            return (max(0, delay), "\(name)-Remaining: 0, \(name)-Reset: \(resetText)")
        }
        return nil
    }

    /// `r` (remaining) and `t` (seconds to reset) of the draft's structured `RateLimit` field
    /// (`"default";r=0;t=30`, several items separated by commas: the first that is spent),
    /// or the older `limit=100, remaining=0, reset=30`.
    static func structuredLimit(_ value: String) -> (remaining: Double, reset: TimeInterval)? {
        var older: [String: Double] = [:]
        for item in value.split(separator: ",") {
            var parameters: [String: Double] = [:]
            for part in item.split(separator: ";") {
                let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard pair.count == 2, let number = Double(pair[1]), number.isFinite else { continue }
                parameters[pair[0].lowercased()] = number
                older[pair[0].lowercased()] = number
            }
            if let remaining = parameters["r"], let reset = parameters["t"], remaining <= 0, reset >= 0 { return (remaining, reset) }
        }
        if let remaining = older["remaining"], let reset = older["reset"], reset >= 0 { return (remaining, reset) }
        return nil
    }
}
