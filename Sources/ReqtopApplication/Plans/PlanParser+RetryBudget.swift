import Foundation
import RequestEventFormat
import RequestOperations

/// The plan's `"retryBudgetPerHost"`: `false` turns the cap off; an object sets `percent`
/// (0–100), `window` (seconds) and `minPerSecond`; absent, the defaults (20, 10, 10).
extension PlanParser {
    package static let retryBudgetKeys: Set<String> = ["percent", "window", "minPerSecond"]

    /// The section as a plan writes it (false: off); every key of ``retryBudgetKeys``.
    package static func retryBudgetObject(_ options: RatioRetryBudget.Options?) -> Any {
        guard let budget = options else { return false }
        return ["percent": budget.percent * 100, "window": budget.window, "minPerSecond": budget.minRetriesPerSecond] as [String: Any]
    }

    package func retryBudgetSettings(_ raw: Any?, at path: String = "retryBudgetPerHost") throws -> RatioRetryBudget.Options? {
        let object: [String: Any]
        switch try section(raw, at: path, keys: Self.retryBudgetKeys, off: "to turn it off") {
        case .defaults: return RatioRetryBudget.Options()
        case .off: return nil
        case .settings(let given): object = given
        }
        let defaults = RatioRetryBudget.Options()
        let percent = try json.number(object["percent"], at: "\(path).percent") ?? defaults.percent * 100
        guard (0...100).contains(percent) else {
            throw PlanError(file: file, path: "\(path).percent", message: "\(percent) is out of range; expected a share of requests from 0 to 100")
        }
        let window = try json.timeLimit(object["window"], at: "\(path).window") ?? defaults.window
        let floor = try json.number(object["minPerSecond"], at: "\(path).minPerSecond") ?? defaults.minRetriesPerSecond
        guard floor >= 0, floor <= 1_000_000 else {
            throw PlanError(file: file, path: "\(path).minPerSecond", message: "\(floor) is out of range; expected retries a second from 0 to 1000000")
        }
        return RatioRetryBudget.Options(percent: percent / 100, window: window, minRetriesPerSecond: floor)
    }

    /// A plan section that is on by default (`circuitBreaker`, `retryBudgetPerHost`).
    package enum Section {
        /// Absent or null: the defaults.
        case defaults
        /// `false`.
        case off
        /// An object with only the section's keys.
        case settings([String: Any])
    }

    /// Reads a section that is on by default. `true` and anything but false or an object are
    /// errors that say what is expected; `off` says what false does.
    package func section(_ raw: Any?, at path: String, keys: Set<String>, off: String) throws -> Section {
        guard let raw, !(raw is NSNull) else { return .defaults }
        if JSONText.isBoolean(raw) {
            guard (raw as? Bool) == false else {
                throw PlanError(file: file, path: path, message: "true is the default; expected false (\(off)) or an object with \(keys.sorted().joined(separator: ", "))")
            }
            return .off
        }
        guard let object = raw as? [String: Any] else {
            throw PlanError(file: file, path: path, message: "expected false or an object, found \(StrictJSONReader.kind(raw))")
        }
        try json.checkKeys(object, allowed: keys, at: path)
        return .settings(object)
    }
}
