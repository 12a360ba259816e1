import Foundation
import RequestEventFormat
import RequestOperations
import Synchronization

/// Records a session's events to a file as they happen, in the JSON-lines event format.
///
/// Each batch of events is written with one `write(2)` of whole lines, straight to the
/// file (no user-space buffer), so a process killed with SIGKILL leaves a file that reads
/// up to its last complete line. Secrets are redacted unless told otherwise, and the header
/// line says which.
public final class EventLogWriter: Sendable {
    public let path: String
    public let redacted: Bool
    private let descriptor: Int32
    private let redactor: StreamRedactor?
    private let subscription = Mutex<EventSubscription?>(nil)
    private let failure = Mutex<String?>(nil)

    /// Creates (or truncates) the file and writes the header line. Refuses to write over
    /// `inputs` or through a symbolic link (see ``OutputFile``).
    /// `settings`: the queue's settings in a plan's terms, for the header (JSON object text).
    /// `origins`: a what-if run's servers and the recorded upstreams they stand for.
    /// `insecure`: the session's transport verifies no TLS certificate (said in the header).
    public init(path: String, hub: EventHub, redact: Bool = true, inputs: [String] = [], settings: String? = nil,
                origins: [String: String] = [:], insecure: Bool = false) throws {
        self.path = path
        self.redacted = redact
        self.redactor = redact ? StreamRedactor() : nil
        descriptor = try OutputFile.create(path, notOver: inputs)
        try writeAll(EventLog.headerLine(startedAt: hub.startedAt, redacted: redact, settings: settings, origins: origins, insecure: insecure) + "\n")
        let subscription = hub.subscribe(label: "reqtop.record") { [self] batch in append(batch) }
        self.subscription.withLock { $0 = subscription }
    }

    /// A recording of events that come from elsewhere (`reqtop attach --record`: the merged
    /// stream of several programs), handed over with ``append(_:)``; `startedAt` is when
    /// their `t` is 0.
    public init(path: String, startedAt: Date, redact: Bool = true, inputs: [String] = []) throws {
        self.path = path
        self.redacted = redact
        self.redactor = redact ? StreamRedactor() : nil
        descriptor = try OutputFile.create(path, notOver: inputs)
        try writeAll(EventLog.headerLine(startedAt: startedAt, redacted: redact) + "\n")
    }

    /// Writes `batch`, one `write(2)` of whole lines; a failure is kept for ``finish(hub:)``.
    public func append(_ batch: [RequestEvent]) {
        var bytes: [UInt8] = []
        for event in batch {
            Self.append(redactor?.redact(event) ?? event, to: &bytes)
            bytes.append(UInt8(ascii: "\n"))
        }
        do {
            try OutputFile.write(bytes, to: descriptor, path: path)
        } catch {
            failure.withLock { $0 = $0 ?? ((error as? ArchiveError)?.message ?? "\(error)") }
        }
    }

    deinit {
        close(descriptor)
    }

    /// Waits until every event published so far is written, stops recording and closes.
    /// Throws the first write error, if any happened (a full disk must not pass silently).
    public func finish(hub: EventHub? = nil) throws {
        hub?.waitUntilDelivered()
        subscription.withLock { $0?.cancel() }
        fsync(descriptor)
        if let failure = failure.withLock({ $0 }) {
            throw ArchiveError(file: path, message: failure)
        }
    }

    /// The most bytes of each answer's body a session may keep in its events (`--body-cap`,
    /// a plan's `bodyCap`): 32 MiB, whose line fits the readers' 64 MiB (`EventLogLines.maxLineBytes`).
    public static let maxBodyCap = 32 << 20

    /// An event's line, within the readers' 64 MiB: a body that would take it past
    /// is left out and said so (a program's own cap, or headers that fill the line).
    static func line(for event: RequestEvent) -> String {
        var bytes: [UInt8] = []
        append(event, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The same, appended to `bytes` (a batch's lines in one buffer, one `write`).
    static func append(_ event: RequestEvent, to bytes: inout [UInt8]) {
        let start = bytes.count
        EventLog.append(event, to: &bytes)
        guard bytes.count - start > EventLogLines.maxLineBytes, let shorter = shortened(event) else { return }
        bytes.removeSubrange(start...)
        EventLog.append(shorter, to: &bytes)
    }

    /// `event` with its body left out, saying why; nil for an event that carries none.
    private static func shortened(_ event: RequestEvent) -> RequestEvent? {
        let reason = "too large for a recording's line (\(EventLogLines.maxLineBytes >> 20) MiB)"
        var shorter = event
        switch event.payload {
        case .responseBody(let body, let total, let truncated, let type):
            shorter.payload = .responseBody(body: .omitted(bytes: Self.size(of: body), reason: reason), totalBytes: total, truncated: truncated, mediaType: type)
        case .queued(let method, let url, let headers, let maxAttempts, let body?, let options):
            shorter.payload = .queued(method: method, url: url, headers: headers, maxAttempts: maxAttempts,
                                      body: .omitted(bytes: Self.size(of: body), reason: reason), options: options)
        case .built(let method, let url, let headers, let body?):
            shorter.payload = .built(method: method, url: url, headers: headers, body: .omitted(bytes: Self.size(of: body), reason: reason))
        default:
            return nil
        }
        return shorter
    }

    private static func size(of body: RecordedBody) -> Int? {
        switch body {
        case .bytes(let data): data.count
        case .omitted(let bytes, _): bytes
        }
    }

    private func writeAll(_ text: String) throws {
        try OutputFile.write(text.utf8, to: descriptor, path: path)
    }
}
