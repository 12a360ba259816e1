import Foundation
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

    public init(path: String, hub: EventHub, redact: Bool = true) throws {
        self.path = path
        self.redacted = redact
        self.startedAt = hub.startedAt
        // Fail now, not at the end, when the file cannot be written.
        guard FileManager.default.createFile(atPath: path, contents: Data()) else {
            throw ArchiveError(file: path, message: "cannot write the recording")
        }
        let redactor = redact ? Redactor() : nil
        let subscription = hub.subscribe(label: "reqtop.record-har") { [self] batch in
            events.withLock { $0 += batch.map { redactor?.redact($0) ?? $0 } }
        }
        self.subscription.withLock { $0 = subscription }
    }

    public func finish(hub: EventHub) throws {
        hub.waitUntilDelivered()
        subscription.withLock { $0?.cancel() }
        do {
            try HARExport.data(events: events.withLock { $0 }, startedAt: startedAt).write(to: URL(fileURLWithPath: path))
        } catch {
            throw ArchiveError(file: path, message: "writing the HAR failed (\((error as NSError).localizedDescription))")
        }
    }
}
