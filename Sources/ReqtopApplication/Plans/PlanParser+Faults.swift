import Foundation
import RequestEventFormat
import RequestOperations

/// A plan's `"faults"`: failures to inject for a chaos run (``FaultRules``), one effect per
/// rule, `match` in the request terms of the filter language, `rate` 0–1 (default 1).
///
/// ```json
/// "faults": [{"match": "host:127.0.0.1:8080 path:/flaky", "status": 503, "retryAfter": 2, "rate": 0.3},
///            {"match": "host:api.example.com", "delay": [0.2, 1.5]},
///            {"match": "method:POST", "reset": true, "rate": 0.1},
///            {"match": "path:/shop.Orders/Find", "grpcStatus": 14, "grpcMessage": "backend down"}]
/// ```
/// `grpcStatus` answers a gRPC call as a failing server does: `200`, `content-type:
/// application/grpc` and the status in one head with no message (gRPC's trailers-only form).
extension PlanParser {
    private static let faultKeys: Set<String> = ["match", "rate", "status", "retryAfter", "delay", "reset", "stall", "truncate",
                                                          "grpcStatus", "grpcMessage"]
    private static let effects = ["status", "delay", "reset", "stall", "truncate", "grpcStatus"]

    package func faultRules(_ raw: Any?) throws -> [FaultRule] {
        guard let raw, !(raw is NSNull) else { return [] }
        guard let list = raw as? [Any] else {
            throw PlanError(file: file, path: "faults", message: "expected an array of rules, found \(StrictJSONReader.kind(raw))")
        }
        return try list.enumerated().map { index, item in try faultRule(item, at: "faults[\(index)]") }
    }

    private func faultRule(_ item: Any, at path: String) throws -> FaultRule {
        guard let object = item as? [String: Any] else {
            throw PlanError(file: file, path: path, message: "expected an object such as {\"match\": \"path:/flaky\", \"status\": 503}, found \(StrictJSONReader.kind(item))")
        }
        try json.checkKeys(object, allowed: Self.faultKeys, at: path)
        let match: RequestMatch
        do {
            match = try RequestMatch(try json.string(object["match"], at: "\(path).match") ?? "")
        } catch let error as RequestMatchError {
            throw PlanError(file: file, path: "\(path).match", message: error.description)
        }
        let given = Self.effects.filter { object[$0] != nil }
        guard given.count == 1 else {
            throw PlanError(file: file, path: path, message: given.isEmpty ? "no effect; expected one of \(Self.effects.joined(separator: ", "))"
                                                                             : "one effect per rule; found \(given.joined(separator: " and "))")
        }
        var rate = 1.0
        if let raw = object["rate"] {
            guard let value = raw as? Double, !JSONText.isBoolean(raw), (0...1).contains(value) else {
                throw PlanError(file: file, path: "\(path).rate", message: "expected a share from 0 to 1, found \(StrictJSONReader.describe(raw))")
            }
            rate = value
        }
        let effect: FaultRule.Effect
        switch given[0] {
        case "status":
            guard let status = try json.integer(object["status"], at: "\(path).status", minimum: 100), status <= 599 else {
                throw PlanError(file: file, path: "\(path).status", message: "expected a status from 100 to 599")
            }
            effect = .status(status, retryAfter: try json.timeLimit(object["retryAfter"], at: "\(path).retryAfter"))
        case "delay":
            if let pair = object["delay"] as? [Any] {
                guard pair.count == 2, let low = pair[0] as? Double, let high = pair[1] as? Double, !JSONText.isBoolean(pair[0]),
                      !JSONText.isBoolean(pair[1]), low >= 0, high >= low, high <= 3600 else {
                    throw PlanError(file: file, path: "\(path).delay", message: "expected seconds, or [least, most] seconds, up to 3600")
                }
                effect = .delay(low...high)
            } else {
                // 0 is a delay of nothing (a rule switched off for now), not a limit that fails.
                guard let seconds = try json.seconds(object["delay"], at: "\(path).delay") else {
                    throw PlanError(file: file, path: "\(path).delay", message: "expected seconds, or [least, most] seconds")
                }
                effect = .delay(seconds...seconds)
            }
        case "truncate":
            effect = .truncate(afterBytes: try json.byteCount(object["truncate"], at: "\(path).truncate", minimum: 0) ?? 0)
        case "grpcStatus":
            guard let code = try json.integer(object["grpcStatus"], at: "\(path).grpcStatus", minimum: 0), code <= 16 else {
                throw PlanError(file: file, path: "\(path).grpcStatus", message: "expected a gRPC status code from 0 to 16 (14 is UNAVAILABLE)")
            }
            var headers = ["content-type": "application/grpc", "grpc-status": String(code)]
            if let message = try json.string(object["grpcMessage"], at: "\(path).grpcMessage") {
                // gRPC percent-encodes the message (anything outside printable ASCII, and `%`).
                headers["grpc-message"] = message.addingPercentEncoding(withAllowedCharacters: Self.grpcMessageCharacters) ?? message
            }
            effect = .respond(status: 200, headers: headers, body: Data())
        default:
            let name = given[0]
            guard let flag = object[name], JSONText.isBoolean(flag), flag as? Bool == true else {
                throw PlanError(file: file, path: "\(path).\(name)", message: "expected true")
            }
            effect = name == "reset" ? .reset : .stall
        }
        if object["grpcMessage"] != nil, given[0] != "grpcStatus" {
            throw PlanError(file: file, path: "\(path).grpcMessage", message: "goes with \"grpcStatus\" only")
        }
        if object["retryAfter"] != nil, given[0] != "status" {
            throw PlanError(file: file, path: "\(path).retryAfter", message: "goes with \"status\" only")
        }
        return FaultRule(match: match, effect: effect, rate: rate, setBy: "plan")
    }

    /// Printable ASCII but `%`: what a `grpc-message` carries as it is.
    private static let grpcMessageCharacters = CharacterSet(charactersIn: Unicode.Scalar(0x20)...Unicode.Scalar(0x7E)).subtracting(CharacterSet(charactersIn: "%"))
}
