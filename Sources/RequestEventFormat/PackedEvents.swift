import Foundation
import RequestOperations

/// One operation's events in as few bytes as they fit in, for what is kept in memory for
/// hours: a finished row in the monitor holds its events this way (about 35 bytes an event
/// instead of 80 inline plus the payload's heap).
///
/// Written through the event schema (`RequestEvent.Payload.write(to:)`) and read back
/// through it (`RequestEvent.Payload.init(name:fields:)`), so every kind, and every kind
/// added later, packs without a line here. Not a file format: it lives only in this process
/// and carries no version.
///
/// Layout, per event: the time (8 bytes, the Double's bits, exact), the attempt (varint), the
/// kind's name, then fields (a tag byte, the key, the value) up to a 0 tag. Every string —
/// names, keys, values, header names — is a reference: 0 then the text (varint length, UTF-8)
/// the first time, the position in the table of known strings afterwards. The table starts
/// with the schema's names and the `context` strings the caller keeps anyway (the row's URL),
/// so a URL repeated in `queued` and `taskCreated` costs a byte or two.
public struct PackedEvents: Sendable, Equatable {
    public private(set) var bytes: [UInt8]

    public init(_ events: [RequestEvent], context: [String] = []) {
        var writer = PackedFieldWriter(context: context)
        for event in events {
            writer.append(event)
        }
        // Exact capacity: kept for hours (`Array(writer.bytes)` would keep the writer's
        // spare room, the same buffer).
        bytes = []
        bytes.reserveCapacity(writer.bytes.count)
        bytes.append(contentsOf: writer.bytes)
    }

    /// Bytes from elsewhere, to see that reading them fails cleanly (tests).
    init(rawBytes: [UInt8]) {
        bytes = rawBytes
    }

    /// The events again, with `operationID`, given the same `context` they were packed with.
    /// Throws only if the bytes were not written by ``init(_:context:)``.
    public func events(operationID: String, context: [String] = []) throws -> [RequestEvent] {
        var reader = PackedFieldCursor(bytes: bytes, context: context)
        var events: [RequestEvent] = []
        while !reader.atEnd {
            events.append(try reader.event(operationID: operationID))
        }
        return events
    }
}

/// The bytes that say what follows a key.
enum PackedTag: UInt8 {
    case end = 0, string, int, double, headers, boolFalse, boolTrue, noError, error, null, kindedError
}

/// Strings every pack knows without writing them: the schema's kind and field names and a
/// few common values. Appending is fine; nothing packed outlives the process.
enum PackedStrings {
    static let known: [String] = EventKind.allCases.map(\.rawValue) + [
        "method", "url", "headers", "maxAttempts", "body", "bodyBase64", "bodyBytes", "bodyOmitted", "timeout",
        "deadline", "hedgeAfter", "hedgeMax", "retryBaseDelay", "retryMultiplier", "retryMaxDelay",
        "retryJitter", "retryNonIdempotent", "reused", "reason", "task", "status", "location", "expectedBytes",
        "bytes", "error", "delay", "racing", "after", "host", "until", "left", "trigger", "by", "command", "batch",
        "size", "name", "outcome", "attempts", "duration", "count",
        "GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "success", "failure", "execute", "caller",
        "Content-Type", "Content-Length", "Accept", "Authorization", "application/json", "[redacted]",
        "dropped", "refused", "insecure", "totalBytes", "truncated", "mediaType", "fault", "rule", "httpVersion",
        "side", "fields", "request", "response", "fromClient", "toClient", "maxRedirects", "relaysEveryAnswer", "relayed", "clientHTTPVersion",
        "refusedByProxy",
    ]
    static let positions: [String: Int] = Dictionary(known.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    static let longest = known.map(\.utf8.count).max() ?? 0
}
