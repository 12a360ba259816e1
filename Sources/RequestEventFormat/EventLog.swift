import Foundation
import RequestOperations

/// The JSON-lines event format: a header line, then one `RequestEvent` a line.
///
/// ```
/// {"event":"session","version":1,"startedAt":"2026-11-22T10:00:00.000Z"}
/// {"t":0.0012,"op":"login","attempt":1,"event":"queued","method":"POST","url":"http://..."}
/// ```
public enum EventLog {
    /// The format version written in the header line.
    public static let version = 1

    /// The first line of a log. `redacted` is written when known (recordings say whether
    /// secrets were taken out); `settings` (added), a JSON object of the queue's settings in
    /// a plan's top-level terms (`maxConcurrent`, `retryBudgetPerHost`, `circuitBreaker`, …),
    /// which `reqtop whatif` starts from; `origins` (added), in a what-if run's recording, a
    /// JSON object from each of its servers' `host:port` to the recorded upstream's
    /// `host:port` it stood for, so `reqtop diff` compares the same upstream across runs.
    /// `insecure` (added): written `true` when the session's transport verified no TLS
    /// certificate (`--insecure`), so a recording says it as loudly as the run did.
    /// A nil `startedAt` is left out (a replay of a recording that had none does not invent one).
    public static func headerLine(startedAt: Date?, redacted: Bool? = nil, settings: String? = nil, origins: [String: String] = [:],
                                  insecure: Bool = false) -> String {
        let origins = origins.isEmpty ? "" : ",\"origins\":{" + origins.sorted { $0.key < $1.key }
            .map { "\(JSONText.quote($0.key)):\(JSONText.quote($0.value))" }.joined(separator: ",") + "}"
        return "{\"event\":\"session\",\"version\":\(version)" + (startedAt.map { ",\"startedAt\":" + JSONText.quote(iso8601($0)) } ?? "")
            + (redacted.map { ",\"redacted\":\($0)" } ?? "") + (insecure ? ",\"insecure\":true" : "") + (settings.map { ",\"settings\":\($0)" } ?? "") + origins + "}"
    }

    /// A date as the log writes it: ISO 8601 with milliseconds (rounded), in UTC.
    ///
    /// From the C library's `gmtime_r` rather than `ISO8601DateFormatter` (an ICU calendar
    /// and date format) or `ISO8601FormatStyle` (a Gregorian calendar in the current time
    /// zone, which opens ICU's zone data): at start, that alone paged in megabytes of ICU's
    /// code and data (#58). Rounded as the formatter rounded.
    public static func iso8601(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        let seconds = (milliseconds / 1000).rounded(.down)
        var parts = tm()
        // Years 0000-9999 (a date read from a file may be anything, even not finite: `time_t`
        // of it would trap); outside them, as the formatter wrote them before.
        guard (-62_167_219_200 ... 253_402_300_799).contains(seconds), var time = Optional(time_t(seconds)),
              gmtime_r(&time, &parts) != nil else {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.string(from: date)
        }
        func digits(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return digits(parts.tm_year + 1900, 4) + "-" + digits(parts.tm_mon + 1, 2) + "-" + digits(parts.tm_mday, 2)
            + "T" + digits(parts.tm_hour, 2) + ":" + digits(parts.tm_min, 2) + ":" + digits(parts.tm_sec, 2)
            + "." + digits(Int32(milliseconds - seconds * 1000), 3) + "Z"
    }

    /// One event as one line of JSON (no trailing newline).
    ///
    /// Written by hand rather than through `JSONEncoder`: the headless output and recordings
    /// write every event, and this is several times faster while giving the same JSON.
    public static func line(for event: RequestEvent) -> String {
        var bytes: [UInt8] = []
        append(event, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The event's line (no trailing newline) appended to `bytes` as UTF-8: a batch of lines
    /// in one buffer, written with one `write`.
    public static func append(_ event: RequestEvent, to bytes: inout [UInt8]) {
        // The name first (the format puts `event` before the payload's fields), then the
        // fields appended to the same buffer, which moves in and out without a copy.
        var line = JSONFieldWriter()
        swap(&line.out.bytes, &bytes)
        line.out.raw("{\"t\":")
        line.out.number(event.time)
        line.out.raw(",\"op\":")
        line.out.quoted(event.operationID)
        line.out.raw(",\"attempt\":")
        line.out.int(event.attempt)
        line.out.raw(",\"event\":")
        line.out.quoted(event.payload.name)
        if let program = event.program {
            line.out.raw(",\"program\":")
            line.out.quoted(program)
        }
        event.payload.write(to: &line)
        line.out.raw("}")
        swap(&line.out.bytes, &bytes)
    }
}

/// Why a line of an event log could not be read.
public struct EventLogError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var message: String

    public var description: String { "line \(line): \(message)" }
}

extension EventLog {
    /// True for a JSON `true`/`false` from JSONSerialization (see ``JSONText/isBoolean(_:)``).
    public static func isJSONBoolean(_ value: Any) -> Bool {
        JSONText.isBoolean(value)
    }

    /// Reads one line of an event log into an event; `nil` for the header line.
    public static func parse(line text: String, lineNumber: Int) throws -> RequestEvent? {
        try parse(lineData: Data(text.utf8), lineNumber: lineNumber)
    }

    /// The same from the line's bytes (UTF-8), without a String in between.
    public static func parse(lineData: Data, lineNumber: Int) throws -> RequestEvent? {
        switch FlatEventLine.read(lineData) {
        case .event(let event): return event
        case .header: return nil
        case .declined: return try parseWithFoundation(lineData: lineData, lineNumber: lineNumber)
        }
    }

    /// For the fuzz target `jsonl-fast`: where the fast reader read `line` differently from
    /// `JSONSerialization` (it may decline; it must never differ), nil when it agrees.
    public static func fastReaderDisagreement(_ line: Data) -> String? {
        let slow = Result { try parseWithFoundation(lineData: line, lineNumber: 1) }
        switch FlatEventLine.read(line) {
        case .declined:
            return nil
        case .header:
            if case .success(nil) = slow { return nil }
            return "the fast reader saw a header, JSONSerialization \(slow)"
        case .event(let event):
            if case .success(event?) = slow { return nil }
            return "the fast reader read \(event), JSONSerialization \(slow)"
        }
    }

    /// The line through `JSONSerialization`: what the fast reader declines, and the words
    /// for every error.
    static func parseWithFoundation(lineData: Data, lineNumber: Int) throws -> RequestEvent? {
        guard let object = try? JSONSerialization.jsonObject(with: lineData) as? [String: Any]
        else { throw EventLogError(line: lineNumber, message: "not a JSON object") }
        return try event(from: object, lineNumber: lineNumber)
    }

    /// An event from a line already read as a JSON object; `nil` for the header line.
    public static func event(from object: [String: Any], lineNumber: Int) throws -> RequestEvent? {
        let fields = JSONObjectFields(object: object, line: lineNumber)
        let name = try fields.string("event")
        if name == "session" { return nil }
        let payload = try RequestEvent.Payload(name: name, fields: fields)
        return RequestEvent(time: try fields.double("t"), operationID: try fields.string("op"), attempt: try fields.int("attempt"), payload: payload,
                            program: fields.optionalString("program"))
    }
}
