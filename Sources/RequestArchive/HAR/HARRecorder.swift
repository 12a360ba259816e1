import Foundation
import RequestEventFormat
import RequestOperations
import Synchronization

/// `--record OUT.har`: writes the session as HAR as it happens, so the file on disk always
/// holds every operation that has finished, in a valid HAR document — a process killed with
/// SIGKILL leaves a HAR that opens (it left an empty file when HAR was written at the end).
///
/// The layout makes that cheap: a header line, one entry per line, and a closing line
/// (`]}}`). Each finished operation's entries are written over the closing line together
/// with a new closing line, in one `pwrite`. A write cut short by a kill leaves a torn last
/// line, which ``HARImport`` reads up to the last whole entry, and says so.
public final class HARRecorder: Sendable {
    public let path: String
    public let redacted: Bool
    private let subscription = Mutex<EventSubscription?>(nil)
    private let descriptor: Int32
    private let startedAt: Date

    private struct Pending {
        /// Events of operations not finished yet.
        var events: [String: [RequestEvent]] = [:]
        /// Host-level events (`op` empty) waiting to ride with the next operation written.
        var hostEvents: [RequestEvent] = []
        /// Where the closing line starts.
        var end: Int = 0
        var entries = 0
        /// The first write that failed (a full disk), reported by ``finish(hub:)``.
        var failure: ArchiveError?
    }
    private let pending = Mutex(Pending())

    /// The first line of every HAR reqtop writes; ``HARImport`` knows a torn one by it.
    static let header = #"{"log":{"version":"1.2","creator":{"name":"reqtop","version":"0.2.0"},"pages":[],"entries":["# + "\n"
    /// The header of recordings made before a clean end was marked: they cannot say whether
    /// they ended cleanly.
    static let legacyHeader = #"{"log":{"version":"1.2","creator":{"name":"reqtop","version":"0.1.0"},"pages":[],"entries":["# + "\n"
    /// The closing line while the session runs: the file is a whole HAR at every moment.
    static let closing = "\n]}}\n"
    /// The closing line ``finish(hub:)`` writes: only a recording that ended cleanly has it
    /// (`log._reqtop.complete`), so one cut off by SIGKILL says so on import.
    static let completeClosing = #"\#n],"_reqtop":{"complete":true}}}\#n"#

    /// Opens the file now (failing now, not at the end, when it cannot be written), and
    /// refuses to write over `inputs` or through a symbolic link (see ``OutputFile``).
    public init(path: String, hub: EventHub, redact: Bool = true, inputs: [String] = []) throws {
        self.path = path
        self.redacted = redact
        self.startedAt = hub.startedAt
        descriptor = try OutputFile.create(path, notOver: inputs)
        try OutputFile.write(Array((Self.header + Self.closing).utf8), to: descriptor, path: path)
        pending.withLock { $0.end = Self.header.utf8.count }
        let redactor = redact ? StreamRedactor() : nil
        let subscription = hub.subscribe(label: "reqtop.record-har") { [self] batch in
            var finished: [[RequestEvent]] = []
            pending.withLock { pending in
                for event in batch.map({ redactor?.redact($0) ?? $0 }) {
                    // Host-level events (`op` empty) go with the next operation that finishes.
                    if event.operationID.isEmpty {
                        pending.hostEvents.append(event)
                        continue
                    }
                    pending.events[event.operationID, default: []].append(event)
                    if case .finished = event.payload, let own = pending.events.removeValue(forKey: event.operationID) {
                        finished.append(own + pending.hostEvents)
                        pending.hostEvents = []
                    }
                }
            }
            for operation in finished { append(operation) }
        }
        self.subscription.withLock { $0 = subscription }
    }

    /// Writes one operation's entries in place of the closing line, followed by it.
    private func append(_ events: [RequestEvent]) {
        let entries = HARExport.entries(events: events, startedAt: startedAt)
        guard !entries.isEmpty else { return }
        pending.withLock { pending in
            guard pending.failure == nil else { return }
            var text = ""
            for entry in entries {
                guard let data = try? JSONSerialization.data(withJSONObject: entry, options: [.sortedKeys]) else { continue }
                text += (pending.entries == 0 ? "" : ",\n") + String(decoding: data, as: UTF8.self)
                pending.entries += 1
            }
            let bytes = Array((text + Self.closing).utf8)
            var done = 0
            while done < bytes.count {
                let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress! + done, $0.count - done, off_t(pending.end + done)) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else {
                    pending.failure = ArchiveError(file: path, message: "writing failed (\(String(cString: strerror(errno))))")
                    return
                }
                done += written
            }
            pending.end += bytes.count - Self.closing.utf8.count
        }
    }

    public func finish(hub: EventHub) throws {
        hub.waitUntilDelivered()
        subscription.withLock { $0?.cancel() }
        // Operations the session never finished (there should be none) are written as they are.
        let unfinished = pending.withLock { pending in
            defer { pending.events = [:] }
            return Array(pending.events.values)
        }
        for operation in unfinished.sorted(by: { ($0.first?.time ?? 0) < ($1.first?.time ?? 0) }) { append(operation) }
        if let failure = pending.withLock({ $0.failure }) { throw failure }
        // Longer than the running closing line, so it covers it whole.
        let closed = pending.withLock { pending -> Bool in
            let bytes = Array(Self.completeClosing.utf8)
            return bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress!, $0.count, off_t(pending.end)) } == bytes.count
        }
        guard closed else { throw ArchiveError(file: path, message: "writing failed (\(String(cString: strerror(errno))))") }
        fsync(descriptor)
    }

    deinit {
        close(descriptor)
    }
}
