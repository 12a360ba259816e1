import Foundation
import RequestOperations

/// The parts of HAR 1.2 that reqtop reads, as Codable types: `JSONDecoder` loads a large
/// HAR several times faster than `JSONSerialization` on Linux, and skips what is not named.
struct HARFile: Decodable {
    let log: HARLog
}

struct HARLog: Decodable {
    let entries: [HAREntry]
}

struct HAREntry: Decodable {
    let startedDateTime: String
    let time: Double?
    let request: HARRequest
    let response: HARResponse
    let timings: [String: Double]?
    let error: String?
    let reqtop: HARReqtop?

    enum CodingKeys: String, CodingKey {
        case startedDateTime, time, request, response, timings
        case error = "_error"
        case reqtop = "_reqtop"
    }
}

struct HARRequest: Decodable {
    let method: String
    let url: String
    let headers: [HARHeader]?
}

struct HARResponse: Decodable {
    let status: Double
    let headers: [HARHeader]?
    let content: HARContent?
    let bodySize: Double?
}

struct HARContent: Decodable {
    let size: Double?
}

struct HARHeader: Decodable {
    let name: String
    let value: String?
}

/// reqtop's own data in an entry it wrote.
struct HARReqtop: Decodable {
    let events: [FlatEvent]?
}

/// One event as the flat JSON object of the event format, decoded field by field.
struct FlatEvent: Decodable {
    struct Failure: Decodable {
        let code: Int
        let message: String?
    }

    let t: Double
    let op: String
    let attempt: Int
    let event: String
    let method: String?, url: String?, headers: [String: String]?, maxAttempts: Int?
    let task: Int?, status: Int?, location: String?, expectedBytes: Int?, bytes: Int?
    let error: Failure?
    let reason: String?, delay: Double?, trigger: String?, by: String?
    let outcome: String?, attempts: Int?, duration: Double?

    /// The event, or `nil` when a field its kind needs is missing.
    var requestEvent: RequestEvent? {
        let payload: RequestEvent.Payload?
        switch event {
        case "queued": payload = method.flatMap { m in url.map { .queued(method: m, url: $0, headers: headers ?? [:], maxAttempts: maxAttempts) } }
        case "started": payload = .started
        case "preparationFailed": payload = reason.map { .preparationFailed(reason: $0) }
        case "taskCreated": payload = task.map { .taskCreated(taskIdentifier: $0, url: url ?? "") }
        case "redirect": payload = status.flatMap { s in location.map { .redirect(status: s, location: $0) } }
        case "response": payload = status.map { .response(status: $0, headers: headers ?? [:], expectedBytes: expectedBytes) }
        case "data": payload = bytes.map { .data(bytes: $0) }
        case "taskCompleted": payload = .taskCompleted(error: error.map { TransportError(code: $0.code, message: $0.message ?? "") })
        case "validationFailed": payload = reason.map { .validationFailed(reason: $0) }
        case "retryScheduled": payload = delay.flatMap { d in reason.map { .retryScheduled(delay: d, reason: $0) } }
        case "earlyRetry": payload = trigger.map { .earlyRetry(trigger: $0, delay: delay ?? 0) }
        case "cancelled": payload = by.map { .cancelled(by: $0) }
        case "finished":
            payload = outcome.flatMap(RequestOutcome.init(rawValue:)).flatMap { o in
                attempts.flatMap { a in duration.map { .finished(outcome: o, status: status, attempts: a, duration: $0, reason: reason) } }
            }
        default: payload = .other(name: event)
        }
        return payload.map { RequestEvent(time: t, operationID: op, attempt: attempt, payload: $0) }
    }
}

/// A `DecodingError` said as a JSON path and what was expected there.
enum HARDecodingError {
    /// What a field should be, by its name, for messages about missing fields.
    private static let expectations: [String: String] = [
        "$": #"a HAR object {"log": {...}}"#, "$.log": #"an object with "entries""#, "$.log.entries": "an array of entries",
        "startedDateTime": "an ISO 8601 date", "method": "a string", "url": "a string", "status": "a number",
        "request": "an object", "response": "an object", "name": "a string",
    ]

    static func message(_ error: DecodingError) -> String {
        switch error {
        case .typeMismatch(let type, let context):
            let path = path(context.codingPath)
            return "\(path): expected \(expected(path, type: type)), found \(found(context.debugDescription))"
        case .keyNotFound(let key, let context):
            let path = path(context.codingPath + [key])
            return "\(path): missing; expected \(expected(path, type: nil))"
        case .valueNotFound(let type, let context):
            let path = path(context.codingPath)
            return "\(path): missing; expected \(expected(path, type: type))"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                let underlying = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
                return "not valid JSON (\(underlying ?? context.debugDescription))"
            }
            return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    static func path(_ codingPath: [CodingKey]) -> String {
        "$" + codingPath.map { key in key.intValue.map { "[\($0)]" } ?? ".\(key.stringValue)" }.joined()
    }

    private static func expected(_ path: String, type: Any.Type?) -> String {
        if let known = expectations[path] { return known }
        let last = path.split(separator: ".").last.map(String.init) ?? path
        if let known = expectations[last.replacingOccurrences(of: #"\[\d+\]"#, with: "", options: .regularExpression)] { return known }
        guard let type else { return "a value" }
        switch type {
        case is String.Type: return "a string"
        case is Double.Type, is Int.Type: return "a number"
        case is [Any].Type: return "an array"
        default:
            let name = "\(type)"
            return name.hasPrefix("Array") ? "an array" : name.hasPrefix("Dictionary") ? "an object" : "a value"
        }
    }

    /// "Expected to decode Double but found a string instead." → "a string".
    private static func found(_ description: String) -> String {
        let lower = description.lowercased()
        for (word, said) in [("string", "a string"), ("dictionary", "an object"), ("array", "an array"), ("bool", "a boolean"),
                             ("number", "a number"), ("null", "null")] where lower.contains("found a \(word)") || lower.contains("found an \(word)") || lower.contains("found \(word)") {
            return said
        }
        return "something else"
    }
}
