import Foundation

/// The JSON-lines event format: a header line, then one ``RequestEvent`` a line.
///
/// ```
/// {"event":"session","version":1,"startedAt":"2026-11-22T10:00:00.000Z"}
/// {"t":0.0012,"op":"login","attempt":1,"event":"queued","method":"POST","url":"http://..."}
/// ```
public enum EventLog {
    /// The format version written in the header line.
    public static let version = 1

    /// The first line of a log. `redacted` is written when known (recordings say whether
    /// secrets were taken out).
    public static func headerLine(startedAt: Date, redacted: Bool? = nil) -> String {
        "{\"event\":\"session\",\"version\":\(version),\"startedAt\":\(quote(iso8601(startedAt)))"
            + (redacted.map { ",\"redacted\":\($0)" } ?? "") + "}"
    }

    /// A date as the log writes it: ISO 8601 with milliseconds, in UTC.
    public static func iso8601(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// One event as one line of JSON (no trailing newline).
    ///
    /// Written by hand rather than through `JSONEncoder`: the headless output and recordings
    /// write every event, and this is several times faster while giving the same JSON.
    public static func line(for event: RequestEvent) -> String {
        var out = "{\"t\":\(number(event.time)),\"op\":\(quote(event.operationID)),\"attempt\":\(event.attempt),\"event\":\(quote(event.payload.name))"
        func field(_ key: String, _ json: String) {
            out += ",\"\(key)\":\(json)"
        }
        switch event.payload {
        case .queued(let method, let url, let headers, let maxAttempts):
            field("method", quote(method))
            field("url", quote(url))
            if !headers.isEmpty { field("headers", object(headers)) }
            if let maxAttempts { field("maxAttempts", "\(maxAttempts)") }
        case .started, .other:
            break
        case .preparationFailed(let reason):
            field("reason", quote(reason))
        case .taskCreated(let identifier, let url):
            field("task", "\(identifier)")
            field("url", quote(url))
        case .redirect(let status, let location):
            field("status", "\(status)")
            field("location", quote(location))
        case .response(let status, let headers, let expected):
            field("status", "\(status)")
            if !headers.isEmpty { field("headers", object(headers)) }
            if let expected { field("expectedBytes", "\(expected)") }
        case .data(let bytes):
            field("bytes", "\(bytes)")
        case .taskCompleted(let error):
            if let error {
                field("error", "{\"code\":\(error.code),\"message\":\(quote(error.message))}")
            } else {
                field("error", "null")
            }
        case .validationFailed(let reason):
            field("reason", quote(reason))
        case .retryScheduled(let delay, let reason):
            field("delay", number(delay))
            field("reason", quote(reason))
        case .earlyRetry(let trigger, let delay):
            field("trigger", quote(trigger))
            field("delay", number(delay))
        case .intercepted(let by, let command):
            field("by", quote(by))
            field("command", quote(command))
        case .held(let batch):
            field("batch", quote(batch))
        case .released(let batch, let size):
            field("batch", quote(batch))
            field("size", "\(size)")
        case .reactorStarted(let name, let trigger):
            field("name", quote(name))
            field("trigger", quote(trigger))
        case .reactorWaiting(let name):
            field("name", quote(name))
        case .reactorFinished(let name, let outcome):
            field("name", quote(name))
            field("outcome", quote(outcome))
        case .requeued(let by, let reason):
            field("by", quote(by))
            field("reason", quote(reason))
        case .cancelled(let by):
            field("by", quote(by))
        case .finished(let outcome, let status, let attempts, let duration, let reason):
            field("outcome", quote(outcome.rawValue))
            field("status", status.map { "\($0)" } ?? "null")
            field("attempts", "\(attempts)")
            field("duration", number(duration))
            if let reason { field("reason", quote(reason)) }
        }
        out += "}"
        return out
    }

    /// Seconds with microsecond resolution, without exponent notation.
    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        let micros = (value * 1_000_000).rounded()
        let negative = micros < 0
        let whole = Int64(abs(micros))
        let fraction = whole % 1_000_000
        var digits = String(fraction)
        digits = String(repeating: "0", count: 6 - digits.count) + digits
        while digits.count > 1, digits.hasSuffix("0") { digits.removeLast() }
        return (negative ? "-" : "") + "\(whole / 1_000_000).\(digits)"
    }

    static func object(_ dictionary: [String: String]) -> String {
        "{" + dictionary.sorted { $0.key < $1.key }.map { "\(quote($0.key)):\(quote($0.value))" }.joined(separator: ",") + "}"
    }

    /// A JSON string literal.
    static func quote(_ string: String) -> String {
        var out = "\""
        out.reserveCapacity(string.utf8.count + 2)
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let s where s.value < 0x20:
                let hex = String(s.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// Why a line of an event log could not be read.
public struct EventLogError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var message: String

    public var description: String { "line \(line): \(message)" }
}

extension EventLog {
    /// True for a JSON `true`/`false` from JSONSerialization, false for a number: both come
    /// out as NSNumber (and on Linux `1 is Bool` holds), but only booleans have objCType "c".
    public static func isJSONBoolean(_ value: Any) -> Bool {
        guard let number = value as? NSNumber else { return false }
        return number.objCType.pointee == 99
    }

    /// Reads one line of an event log into an event; `nil` for the header line.
    public static func parse(line text: String, lineNumber: Int) throws -> RequestEvent? {
        guard let data = text.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { throw EventLogError(line: lineNumber, message: "not a JSON object") }
        let fields = Fields(object: object, line: lineNumber)
        let name = try fields.string("event")
        if name == "session" { return nil }
        let payload: RequestEvent.Payload
        switch name {
        case "queued":
            payload = .queued(method: try fields.string("method"), url: try fields.string("url"), headers: fields.headers("headers"),
                              maxAttempts: try? fields.int("maxAttempts"))
        case "started": payload = .started
        case "preparationFailed": payload = .preparationFailed(reason: try fields.string("reason"))
        case "taskCreated": payload = .taskCreated(taskIdentifier: try fields.int("task"), url: (try? fields.string("url")) ?? "")
        case "redirect": payload = .redirect(status: try fields.int("status"), location: try fields.string("location"))
        case "response":
            payload = .response(status: try fields.int("status"), headers: fields.headers("headers"), expectedBytes: try? fields.int("expectedBytes"))
        case "data": payload = .data(bytes: try fields.int("bytes"))
        case "taskCompleted":
            if let error = object["error"] as? [String: Any] {
                let inner = Fields(object: error, line: lineNumber)
                payload = .taskCompleted(error: TransportError(code: try inner.int("code"), message: (try? inner.string("message")) ?? ""))
            } else {
                payload = .taskCompleted(error: nil)
            }
        case "validationFailed": payload = .validationFailed(reason: try fields.string("reason"))
        case "retryScheduled": payload = .retryScheduled(delay: try fields.double("delay"), reason: try fields.string("reason"))
        case "earlyRetry": payload = .earlyRetry(trigger: try fields.string("trigger"), delay: (try? fields.double("delay")) ?? 0)
        case "intercepted": payload = .intercepted(by: try fields.string("by"), command: try fields.string("command"))
        case "held": payload = .held(batch: try fields.string("batch"))
        case "released": payload = .released(batch: try fields.string("batch"), size: try fields.int("size"))
        case "reactorStarted": payload = .reactorStarted(name: try fields.string("name"), trigger: try fields.string("trigger"))
        case "reactorWaiting": payload = .reactorWaiting(name: try fields.string("name"))
        case "reactorFinished": payload = .reactorFinished(name: try fields.string("name"), outcome: try fields.string("outcome"))
        case "requeued": payload = .requeued(by: try fields.string("by"), reason: try fields.string("reason"))
        case "cancelled": payload = .cancelled(by: try fields.string("by"))
        case "finished":
            let outcomeName = try fields.string("outcome")
            guard let outcome = RequestOutcome(rawValue: outcomeName) else {
                throw EventLogError(line: lineNumber, message: "field \"outcome\": expected success, failure or cancelled, found \"\(outcomeName)\"")
            }
            payload = .finished(outcome: outcome, status: try? fields.int("status"), attempts: try fields.int("attempts"),
                                duration: try fields.double("duration"), reason: try? fields.string("reason"))
        default: payload = .other(name: name)
        }
        return RequestEvent(time: try fields.double("t"), operationID: try fields.string("op"), attempt: try fields.int("attempt"), payload: payload)
    }

    private struct Fields {
        let object: [String: Any]
        let line: Int

        func missing(_ key: String, _ expected: String) -> EventLogError {
            object[key] == nil
                ? EventLogError(line: line, message: "missing field \"\(key)\" (expected \(expected))")
                : EventLogError(line: line, message: "field \"\(key)\": expected \(expected)")
        }

        func string(_ key: String) throws -> String {
            guard let value = object[key] as? String else { throw missing(key, "a string") }
            return value
        }

        /// A JSON number, not `true`/`false`.
        private func number(_ key: String) -> NSNumber? {
            guard let value = object[key] as? NSNumber, !EventLog.isJSONBoolean(value) else { return nil }
            return value
        }

        func double(_ key: String) throws -> Double {
            guard let value = number(key) else { throw missing(key, "a number") }
            return value.doubleValue
        }

        func int(_ key: String) throws -> Int {
            guard let value = number(key), value.doubleValue == value.doubleValue.rounded() else { throw missing(key, "an integer") }
            return value.intValue
        }

        func headers(_ key: String) -> [String: String] {
            (object[key] as? [String: Any])?.compactMapValues { $0 as? String } ?? [:]
        }
    }
}
