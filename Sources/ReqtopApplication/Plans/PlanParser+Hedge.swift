import Foundation
import RequestEventFormat
import RequestOperations

/// The plan's `"hedge"`, top level (for every request) or per request: an object with
/// `after` (seconds without a response before a copy is sent) and `max` (copies, default
/// 1); `false` turns a plan-wide hedge off for one request. Off by default: a hedge is an
/// extra request to the host. Only idempotent requests are ever hedged (see ``HedgePolicy``).
extension PlanParser {
    package static let hedgeKeys: Set<String> = ["after", "max"]

    package func hedgeSettings(_ raw: Any?, base: HedgePolicy?, at path: String) throws -> HedgePolicy? {
        guard let raw, !(raw is NSNull) else { return base }
        if JSONText.isBoolean(raw) {
            guard (raw as? Bool) == false else {
                throw PlanError(file: file, path: path, message: "expected false (no hedging) or an object with \"after\" and optional \"max\", found true")
            }
            return nil
        }
        guard let object = raw as? [String: Any] else {
            throw PlanError(file: file, path: path, message: "expected false or an object with \"after\" and optional \"max\", found \(StrictJSONReader.kind(raw))")
        }
        try json.checkKeys(object, allowed: Self.hedgeKeys, at: path)
        guard let after = try json.timeLimit(object["after"], at: "\(path).after") else {
            throw PlanError(file: file, path: "\(path).after", message: "missing; expected the seconds without a response before a copy is sent (e.g. 0.2)")
        }
        guard after <= 86_400 else {
            throw PlanError(file: file, path: "\(path).after", message: "\(after) is more than a day; expected seconds such as 0.2")
        }
        let max = try json.integer(object["max"], at: "\(path).max", minimum: 1) ?? 1
        guard max <= 10 else {
            throw PlanError(file: file, path: "\(path).max", message: "\(max) copies is too many; expected 1 to 10")
        }
        return HedgePolicy(after: after, max: max)
    }
}
