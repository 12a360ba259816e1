import Foundation
import HTTPTypes

/// The event format's schema, kept beside the events: each payload's `event` name and its
/// fields with their names and kinds. The engine knows no file format; the
/// `RequestEventFormat` module writes these fields as JSON and reads them back through
/// ``EventFieldWriter`` and ``EventFieldReader``.
extension RequestEvent.Payload {
    /// The `event` field.
    public var name: String {
        if let kind { return kind.rawValue }
        var discard = DiscardingFieldWriter()
        return write(to: &discard)
    }

    /// Writes the payload's fields, in order, and returns its `event` name. Optional fields
    /// that are absent are not written; `null` is written where the format says null.
    @discardableResult
    public func write<W: EventFieldWriter>(to w: inout W) -> String {
        switch self {
        case .queued(let method, let url, let headers, let maxAttempts, let body, let options):
            w.string("method", method)
            w.string("url", url)
            if !headers.isEmpty { w.headers("headers", headers) }
            if let maxAttempts { w.int("maxAttempts", maxAttempts) }
            Self.write(body: body, to: &w)
            if let options { Self.write(options: options, to: &w) }
            return "queued"
        case .built(let method, let url, let headers, let body):
            w.string("method", method)
            w.string("url", url)
            if !headers.isEmpty { w.headers("headers", headers) }
            Self.write(body: body, to: &w)
            return "built"
        case .started:
            return "started"
        case .sent:
            return "sent"
        case .injected(let fault, let rule, let by):
            w.string("fault", fault)
            w.string("rule", rule)
            w.string("by", by)
            return "injected"
        case .breakpoint(let id, let rule, let by, let afterResponse):
            w.int("id", id)
            w.string("rule", rule)
            w.string("by", by)
            if afterResponse { w.string("stage", Breakpoint.Stage.afterResponse.rawValue) }
            return "breakpoint"
        case .breakpointResolved(let how, let by):
            w.string("how", how)
            w.string("by", by)
            return "breakpointResolved"
        case .breakpointSet(let id, let rule, let by, let enabled, let afterResponse):
            w.int("id", id)
            w.string("rule", rule)
            w.string("by", by)
            w.bool("enabled", enabled)
            if afterResponse { w.string("stage", Breakpoint.Stage.afterResponse.rawValue) }
            return "breakpointSet"
        case .breakpointRemoved(let id):
            w.int("id", id)
            return "breakpointRemoved"
        case .connection(let id, let reused, let proxy):
            w.int("connection", id)
            w.bool("reused", reused)
            if let proxy { w.string("proxy", proxy) }
            return "connection"
        case .preparationFailed(let reason):
            w.string("reason", reason)
            return "preparationFailed"
        case .taskCreated(let identifier, let url, let insecure):
            w.int("task", identifier)
            w.string("url", url)
            if insecure { w.bool("insecure", true) }
            return "taskCreated"
        case .redirect(let status, let location, let dropped, let refused):
            w.int("status", status)
            w.string("location", location)
            if !dropped.isEmpty { w.string("dropped", dropped.joined(separator: ",")) }
            if let refused { w.string("refused", refused) }
            return "redirect"
        case .response(let status, let headers, let expected, let version):
            if let version { w.string("httpVersion", version) }
            w.int("status", status)
            if !headers.isEmpty { w.headers("headers", headers) }
            if let expected { w.int("expectedBytes", expected) }
            return "response"
        case .data(let bytes):
            w.int("bytes", bytes)
            return "data"
        case .uploaded(let bytes, let total):
            w.int("bytes", bytes)
            if let total { w.int("totalBytes", total) }
            return "uploaded"
        case .responseBody(let body, let total, let truncated, let mediaType):
            Self.write(body: body, to: &w)
            w.int("totalBytes", total)
            if truncated { w.bool("truncated", true) }
            if let mediaType { w.string("mediaType", mediaType) }
            return "responseBody"
        case .requestBody(let body, let total, let truncated, let mediaType):
            Self.write(body: body, to: &w)
            w.int("totalBytes", total)
            if truncated { w.bool("truncated", true) }
            if let mediaType { w.string("mediaType", mediaType) }
            return "requestBody"
        case .headerFields(let side, let fields):
            w.string("side", side.rawValue)
            w.fieldLines("fields", fields)
            return "headerFields"
        case .trailers(let side, let fields):
            w.string("side", side.rawValue)
            w.fieldLines("fields", fields)
            return "trailers"
        case .messages(let fromClient, let toClient):
            w.int("fromClient", fromClient)
            w.int("toClient", toClient)
            return "messages"
        case .taskCompleted(let error):
            w.error("error", error)
            return "taskCompleted"
        case .validationFailed(let reason):
            w.string("reason", reason)
            return "validationFailed"
        case .retryScheduled(let delay, let reason):
            w.double("delay", delay)
            w.string("reason", reason)
            return "retryScheduled"
        case .retryDenied(let reason):
            w.string("reason", reason)
            return "retryDenied"
        case .hedged(let racing, let after):
            w.int("racing", racing)
            w.double("after", after)
            return "hedged"
        case .circuitWaiting(let host):
            w.string("host", host)
            return "circuitWaiting"
        case .circuitOpened(let host, let reason, let until):
            w.string("host", host)
            w.string("reason", reason)
            if let until { w.double("until", until) }
            return "circuitOpened"
        case .circuitHalfOpen(let host):
            w.string("host", host)
            return "circuitHalfOpen"
        case .circuitClosed(let host, let reason):
            w.string("host", host)
            w.string("reason", reason)
            return "circuitClosed"
        case .rateLimitWaiting(let host, let until):
            w.string("host", host)
            w.double("until", until)
            return "rateLimitWaiting"
        case .retryBudget(let host, let left):
            w.string("host", host)
            w.int("left", left)
            return "retryBudget"
        case .rateLimited(let host, let until, let reason):
            w.string("host", host)
            w.double("until", until)
            w.string("reason", reason)
            return "rateLimited"
        case .earlyRetry(let trigger, let delay):
            w.string("trigger", trigger)
            w.double("delay", delay)
            return "earlyRetry"
        case .intercepted(let by, let command):
            w.string("by", by)
            w.string("command", command)
            return "intercepted"
        case .held(let batch):
            w.string("batch", batch)
            return "held"
        case .released(let batch, let size):
            w.string("batch", batch)
            w.int("size", size)
            return "released"
        case .reactorStarted(let name, let trigger):
            w.string("name", name)
            w.string("trigger", trigger)
            return "reactorStarted"
        case .reactorWaiting(let name):
            w.string("name", name)
            return "reactorWaiting"
        case .reactorFinished(let name, let outcome):
            w.string("name", name)
            w.string("outcome", outcome.description)
            return "reactorFinished"
        case .requeued(let by, let reason):
            w.string("by", by)
            w.string("reason", reason)
            return "requeued"
        case .cancelled(let by):
            w.string("by", by)
            return "cancelled"
        case .finished(let outcome, let status, let attempts, let duration, let reason):
            w.string("outcome", outcome.rawValue)
            if let status { w.int("status", status) } else { w.null("status") }
            w.int("attempts", attempts)
            w.double("duration", duration)
            if let reason { w.string("reason", reason) }
            return "finished"
        case .missed(let count):
            w.int("count", count)
            return "missed"
        case .other(let name):
            return name
        }
    }

    /// Reads the payload of kind `name` from its fields; an unknown kind is kept as
    /// ``other(name:)`` so newer files still read.
    public init<R: EventFieldReader>(name: String, fields r: R) throws {
        switch name {
        case "queued":
            self = .queued(method: try r.string("method"), url: try r.string("url"), headers: r.headers("headers"),
                           maxAttempts: r.optionalInt("maxAttempts"), body: try Self.readBody(r), options: try Self.readOptions(r))
        case "built":
            self = .built(method: try r.string("method"), url: try r.string("url"), headers: r.headers("headers"), body: try Self.readBody(r))
        case "started": self = .started
        case "sent": self = .sent
        case "injected": self = .injected(fault: try r.string("fault"), rule: r.optionalString("rule") ?? "", by: r.optionalString("by") ?? "")
        case "breakpoint":
            self = .breakpoint(id: try r.int("id"), rule: r.optionalString("rule") ?? "", by: r.optionalString("by") ?? "",
                               afterResponse: r.optionalString("stage") == Breakpoint.Stage.afterResponse.rawValue)
        case "breakpointResolved": self = .breakpointResolved(how: try r.string("how"), by: r.optionalString("by") ?? "")
        case "breakpointSet":
            self = .breakpointSet(id: try r.int("id"), rule: r.optionalString("rule") ?? "", by: r.optionalString("by") ?? "",
                                  enabled: try r.optionalBool("enabled") ?? true,
                                  afterResponse: r.optionalString("stage") == Breakpoint.Stage.afterResponse.rawValue)
        case "breakpointRemoved": self = .breakpointRemoved(id: try r.int("id"))
        case "connection":
            self = .connection(id: try r.int("connection"), reused: try r.bool("reused"), proxy: r.optionalString("proxy"))
        case "preparationFailed": self = .preparationFailed(reason: try r.string("reason"))
        case "taskCreated":
            self = .taskCreated(taskIdentifier: try r.int("task"), url: r.optionalString("url") ?? "", insecure: try r.optionalBool("insecure") ?? false)
        case "redirect":
            self = .redirect(status: try r.int("status"), location: try r.string("location"),
                             dropped: r.optionalString("dropped").map { $0.split(separator: ",").map(String.init) } ?? [],
                             refused: r.optionalString("refused"))
        case "response":
            self = .response(status: try r.int("status"), headers: r.headers("headers"), expectedBytes: r.optionalInt("expectedBytes"),
                             httpVersion: r.optionalString("httpVersion"))
        case "data": self = .data(bytes: try r.int("bytes"))
        case "uploaded": self = .uploaded(bytes: try r.int("bytes"), totalBytes: r.optionalInt("totalBytes"))
        case "responseBody":
            let total = try r.int("totalBytes")
            if total < 0 { throw r.invalid("totalBytes", expected: "a size of 0 or more", found: "\(total)") }
            self = .responseBody(body: try Self.readBody(r) ?? .bytes(Data()), totalBytes: total,
                                 truncated: try r.optionalBool("truncated") ?? false, mediaType: r.optionalString("mediaType"))
        case "requestBody":
            let total = try r.int("totalBytes")
            if total < 0 { throw r.invalid("totalBytes", expected: "a size of 0 or more", found: "\(total)") }
            self = .requestBody(body: try Self.readBody(r) ?? .bytes(Data()), totalBytes: total, truncated: try r.optionalBool("truncated") ?? false,
                                mediaType: r.optionalString("mediaType"))
        case "headerFields", "trailers":
            let sideName = try r.string("side")
            guard let side = FieldSide(rawValue: sideName) else {
                throw r.invalid("side", expected: FieldSide.allCases.map(\.rawValue).joined(separator: " or "), found: "\"\(sideName.prefix(20))\"")
            }
            let text = try r.string("fields")
            guard let fields = Self.fields(fromLines: text) else {
                throw r.invalid("fields", expected: "lines of Name: value", found: "\"\(text.prefix(40))\"")
            }
            self = name == "trailers" ? .trailers(side: side, fields: fields) : .headerFields(side: side, fields: fields)
        case "messages": self = .messages(fromClient: try r.int("fromClient"), toClient: try r.int("toClient"))
        case "taskCompleted": self = .taskCompleted(error: try r.error("error"))
        case "validationFailed": self = .validationFailed(reason: try r.string("reason"))
        case "retryScheduled": self = .retryScheduled(delay: try r.double("delay"), reason: try r.string("reason"))
        case "retryDenied": self = .retryDenied(reason: try r.string("reason"))
        case "hedged": self = .hedged(racing: try r.int("racing"), after: try r.double("after"))
        case "circuitWaiting": self = .circuitWaiting(host: try r.string("host"))
        case "circuitOpened":
            // Absent when isolated by hand; present, it is checked like every time (a bad one
            // read as absent would show an open breaker as "isolated").
            self = .circuitOpened(host: try r.string("host"), reason: try r.string("reason"), until: r.has("until") ? try r.double("until") : nil)
        case "circuitHalfOpen": self = .circuitHalfOpen(host: try r.string("host"))
        case "circuitClosed": self = .circuitClosed(host: try r.string("host"), reason: r.optionalString("reason") ?? "")
        case "rateLimitWaiting": self = .rateLimitWaiting(host: try r.string("host"), until: try r.double("until"))
        case "retryBudget": self = .retryBudget(host: try r.string("host"), left: try r.int("left"))
        case "rateLimited": self = .rateLimited(host: try r.string("host"), until: try r.double("until"), reason: r.optionalString("reason") ?? "")
        case "earlyRetry": self = .earlyRetry(trigger: try r.string("trigger"), delay: r.optionalDouble("delay") ?? 0)
        case "intercepted": self = .intercepted(by: try r.string("by"), command: try r.string("command"))
        case "held": self = .held(batch: try r.string("batch"))
        case "released": self = .released(batch: try r.string("batch"), size: try r.int("size"))
        case "reactorStarted": self = .reactorStarted(name: try r.string("name"), trigger: try r.string("trigger"))
        case "reactorWaiting": self = .reactorWaiting(name: try r.string("name"))
        case "reactorFinished": self = .reactorFinished(name: try r.string("name"), outcome: ReactorOutcome(wire: try r.string("outcome")))
        case "requeued": self = .requeued(by: try r.string("by"), reason: try r.string("reason"))
        case "cancelled": self = .cancelled(by: try r.string("by"))
        case "missed": self = .missed(count: try r.int("count"))
        case "finished":
            let outcomeName = try r.string("outcome")
            guard let outcome = RequestOutcome(rawValue: outcomeName) else {
                throw r.invalid("outcome", expected: "success, failure or cancelled", found: "\"\(outcomeName)\"")
            }
            self = .finished(outcome: outcome, status: r.optionalInt("status"), attempts: try r.int("attempts"),
                             duration: try r.double("duration"), reason: r.optionalString("reason"))
        default: self = .other(name: name)
        }
    }
}

/// Where a payload writes its fields (the JSON-lines writer is one).
public protocol EventFieldWriter {
    mutating func string(_ key: String, _ value: String)
    mutating func int(_ key: String, _ value: Int)
    mutating func double(_ key: String, _ value: Double)
    mutating func headers(_ key: String, _ value: [String: String])
    mutating func bool(_ key: String, _ value: Bool)
    /// A transport error, or null for none.
    mutating func error(_ key: String, _ value: TransportError?)
    mutating func null(_ key: String)
    /// A head's fields as one string of `Name: value` lines (``RequestEvent/Payload/lines(of:)``).
    /// Added with a default that writes that string; a writer may write the lines as it goes
    /// (the JSON-lines writer does: joining them first was ~7k instructions a proxied request, #58).
    mutating func fieldLines(_ key: String, _ value: HTTPFields)
}

extension EventFieldWriter {
    public mutating func fieldLines(_ key: String, _ value: HTTPFields) {
        string(key, RequestEvent.Payload.lines(of: value))
    }
}

/// Where a payload reads its fields from. A required field that is missing or of the wrong
/// kind throws; an optional one reads as nil.
public protocol EventFieldReader {
    func string(_ key: String) throws -> String
    func int(_ key: String) throws -> Int
    func double(_ key: String) throws -> Double
    func optionalString(_ key: String) -> String?
    func optionalInt(_ key: String) -> Int?
    func optionalDouble(_ key: String) -> Double?
    /// Whether the field is present (with any value, null included).
    func has(_ key: String) -> Bool
    /// Absent: nil; present and not a boolean: throws.
    func optionalBool(_ key: String) throws -> Bool?
    /// Absent or not a boolean: throws.
    func bool(_ key: String) throws -> Bool
    /// Absent fields and non-string values are left out.
    func headers(_ key: String) -> [String: String]
    /// Null or absent: nil.
    func error(_ key: String) throws -> TransportError?
    /// The error for a field present with a value the kind does not accept.
    func invalid(_ key: String, expected: String, found: String) -> Error
}

/// Writes nothing: for the name alone.
private struct DiscardingFieldWriter: EventFieldWriter {
    func string(_ key: String, _ value: String) {}
    func int(_ key: String, _ value: Int) {}
    func double(_ key: String, _ value: Double) {}
    func headers(_ key: String, _ value: [String: String]) {}
    func bool(_ key: String, _ value: Bool) {}
    func error(_ key: String, _ value: TransportError?) {}
    func null(_ key: String) {}
}

extension RequestEvent.Payload {
    /// A head's fields as `headerFields` writes them: `Name: value` lines joined by `\n`
    /// (a field's value holds no line break: swift-http-types makes one a space).
    public static func lines(of fields: HTTPFields) -> String {
        fields.map { "\($0.name.rawName): \($0.value)" }.joined(separator: "\n")
    }

    /// The fields `lines` holds; nil when a line is not `Name: value` with a field name.
    public static func fields(fromLines lines: String) -> HTTPFields? {
        var fields = HTTPFields()
        for line in lines.split(separator: "\n", omittingEmptySubsequences: true) {
            guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else { return nil }
            var value = line[line.index(after: colon)...]
            if value.first == " " { value = value.dropFirst() }
            fields.append(HTTPField(name: name, value: String(value)))
        }
        return fields
    }
}
