import Foundation
import RequestEventFormat
import RequestOperations
import Synchronization

/// The headless output: the event log on stdout, one JSON object a line, as events happen.
///
/// Each batch of events is written with one `write`, so a reader that follows the output
/// (or a process killed half way) sees whole lines.
final class JSONLinesOutput: Sendable {
    private let handle: FileHandle
    private let hub: EventHub
    private let subscription = Mutex<EventSubscription?>(nil)

    init(hub: EventHub, handle: FileHandle = .standardOutput) {
        self.hub = hub
        self.handle = handle
    }

    /// Writes the header line and starts following the hub.
    func start() {
        write(EventLog.headerLine(startedAt: hub.startedAt) + "\n")
        let subscription = hub.subscribe(label: "reqtop.stdout") { [self] batch in
            var text = ""
            text.reserveCapacity(batch.count * 120)
            for event in batch {
                text += EventLog.line(for: event)
                text += "\n"
            }
            write(text)
        }
        self.subscription.withLock { $0 = subscription }
    }

    /// Waits until every event published so far is written, then stops following.
    func finish() {
        hub.waitUntilDelivered()
        subscription.withLock { $0?.cancel() }
    }

    private func write(_ text: String) {
        handle.write(Data(text.utf8))
    }
}
