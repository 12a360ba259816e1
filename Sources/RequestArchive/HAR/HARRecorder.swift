import Foundation
import RequestEventFormat
import RequestOperations
import Synchronization

/// `--record OUT.har`: keeps the session's events (redacted unless told otherwise) and
/// writes them as HAR when the session ends. HAR is one JSON document, so unlike the
/// JSON-lines log it is written once, at the end.
public final class HARRecorder: Sendable {
    public let path: String
    public let redacted: Bool
    private let events = Mutex<[RequestEvent]>([])
    private let subscription = Mutex<EventSubscription?>(nil)
    private let startedAt: Date
    private let descriptor: Int32

    /// Opens the file now (failing now, not at the end, when it cannot be written), and
    /// refuses to write over `inputs` or through a symbolic link (see ``OutputFile``).
    public init(path: String, hub: EventHub, redact: Bool = true, inputs: [String] = []) throws {
        self.path = path
        self.redacted = redact
        self.startedAt = hub.startedAt
        descriptor = try OutputFile.create(path, notOver: inputs)
        let redactor = redact ? Redactor() : nil
        let subscription = hub.subscribe(label: "reqtop.record-har") { [self] batch in
            events.withLock { $0 += batch.map { redactor?.redact($0) ?? $0 } }
        }
        self.subscription.withLock { $0 = subscription }
    }

    public func finish(hub: EventHub) throws {
        hub.waitUntilDelivered()
        subscription.withLock { $0?.cancel() }
        let data = try HARExport.data(events: events.withLock { $0 }, startedAt: startedAt)
        try OutputFile.write(data, to: descriptor, path: path)
        fsync(descriptor)
    }

    deinit {
        close(descriptor)
    }
}
