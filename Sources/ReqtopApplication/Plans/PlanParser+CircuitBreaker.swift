import Foundation
import RequestEventFormat
import RequestOperations

/// The plan's `"circuitBreaker"`: `false` turns breakers off; an object sets any of
/// `window`, `minimumRequests`, `failureRatio` (0–100 %), `consecutiveFailures`, `openFor`,
/// `maxOpenFor`, `failFast` and `maxWait` (seconds, or false: until the deadline); absent,
/// the defaults (10 s, 20, 50 %, 5, 5 s, 60 s, false, 60 s).
extension PlanParser {
    package static let circuitBreakerKeys: Set<String> = ["window", "minimumRequests", "failureRatio", "consecutiveFailures",
                                                  "openFor", "maxOpenFor", "failFast", "maxWait"]

    /// The section as a plan writes it (false: off), so a recording's header keeps a run's
    /// settings in the words this parser reads back; every key of ``circuitBreakerKeys``.
    package static func circuitBreakerObject(_ options: HostCircuitBreaker.Options?) -> Any {
        guard let breaker = options else { return false }
        return ["window": breaker.window, "minimumRequests": breaker.minimumRequests, "failureRatio": breaker.failureRatio * 100,
                "consecutiveFailures": breaker.consecutiveConnectionFailures, "openFor": breaker.openFor, "maxOpenFor": breaker.maxOpenFor,
                "failFast": breaker.failFast, "maxWait": breaker.maxWait.map { $0 as Any } ?? false] as [String: Any]
    }

    package func circuitBreakerSettings(_ raw: Any?, at path: String = "circuitBreaker") throws -> HostCircuitBreaker.Options? {
        let object: [String: Any]
        switch try section(raw, at: path, keys: Self.circuitBreakerKeys, off: "to turn breakers off") {
        case .defaults: return HostCircuitBreaker.Options()
        case .off: return nil
        case .settings(let given): object = given
        }
        let defaults = HostCircuitBreaker.Options()
        let ratio = try json.number(object["failureRatio"], at: "\(path).failureRatio") ?? defaults.failureRatio * 100
        guard ratio > 0, ratio <= 100 else {
            throw PlanError(file: file, path: "\(path).failureRatio", message: "\(ratio) is out of range; expected a share of failed attempts above 0, up to 100")
        }
        let openFor = try json.timeLimit(object["openFor"], at: "\(path).openFor") ?? defaults.openFor
        let maxOpenFor = try json.timeLimit(object["maxOpenFor"], at: "\(path).maxOpenFor") ?? max(openFor, defaults.maxOpenFor)
        guard maxOpenFor >= openFor else {
            throw PlanError(file: file, path: "\(path).maxOpenFor", message: "\(maxOpenFor) is shorter than openFor (\(openFor)); expected at least openFor")
        }
        var failFast = defaults.failFast
        if let rawFast = object["failFast"] {
            guard JSONText.isBoolean(rawFast), let value = rawFast as? Bool else {
                throw PlanError(file: file, path: "\(path).failFast", message: "expected true or false, found \(StrictJSONReader.kind(rawFast))")
            }
            failFast = value
        }
        var maxWait: TimeInterval? = defaults.maxWait
        if let rawWait = object["maxWait"] {
            if JSONText.isBoolean(rawWait), (rawWait as? Bool) == false {
                maxWait = nil
            } else {
                maxWait = try json.timeLimit(rawWait, at: "\(path).maxWait")
            }
        }
        return HostCircuitBreaker.Options(
            window: try json.timeLimit(object["window"], at: "\(path).window") ?? defaults.window,
            minimumRequests: try json.integer(object["minimumRequests"], at: "\(path).minimumRequests", minimum: 1) ?? defaults.minimumRequests,
            failureRatio: ratio / 100,
            consecutiveConnectionFailures: try json.integer(object["consecutiveFailures"], at: "\(path).consecutiveFailures", minimum: 0)
                ?? defaults.consecutiveConnectionFailures,
            openFor: openFor, maxOpenFor: maxOpenFor, failFast: failFast, maxWait: maxWait)
    }
}
