import Foundation
import RequestEventFormat
import RequestOperations

/// The plan's `"retryBudgetPerHost"`: `false` turns the cap off; an object sets `percent`
/// (0–100), `window` (seconds) and `minPerSecond`; absent, the defaults (20, 10, 10).
extension PlanParser {
    static let retryBudgetKeys: Set<String> = ["percent", "window", "minPerSecond"]

    func retryBudgetSettings(_ raw: Any?, at path: String = "retryBudgetPerHost") throws -> RatioRetryBudget.Options? {
        guard let setting = try defaultOffOrObject(raw, at: path, keys: Self.retryBudgetKeys, off: "to turn it off") else {
            return RatioRetryBudget.Options()
        }
        guard let object = setting else { return nil }
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

    /// A setting that is on by default: absent or null → nil (the default); `false` →
    /// `.some(nil)` (off); an object with only `keys` → that object. `true` and anything else
    /// are errors that say what is expected; `off` says what false does.
    func defaultOffOrObject(_ raw: Any?, at path: String, keys: Set<String>, off: String) throws -> [String: Any]?? {
        guard let raw, !(raw is NSNull) else { return nil }
        if JSONText.isBoolean(raw) {
            guard (raw as? Bool) == false else {
                throw PlanError(file: file, path: path, message: "true is the default; expected false (\(off)) or an object with \(keys.sorted().joined(separator: ", "))")
            }
            return .some(nil)
        }
        guard let object = raw as? [String: Any] else {
            throw PlanError(file: file, path: path, message: "expected false or an object, found \(StrictJSONReader.kind(raw))")
        }
        try json.checkKeys(object, allowed: keys, at: path)
        return .some(object)
    }
}
