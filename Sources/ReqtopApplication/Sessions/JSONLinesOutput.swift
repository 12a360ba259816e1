import Foundation
import RequestEventFormat
import RequestOperations
import Synchronization

/// The headless output: the event log on stdout, one JSON object a line, as events happen.
///
/// Each batch of events is written with one `write`, so a reader that follows the output
/// (or a process killed half way) sees whole lines.
package final class JSONLinesOutput: Sendable {
    private let hub: EventHub
    private let subscription = Mutex<EventSubscription?>(nil)
    /// Secrets out of what is printed (stdout ends up in CI logs); nil with --no-redact.
    private let redactor: StreamRedactor?

    /// The session's transport verifies no TLS certificate: the header says so.
    private let insecure: Bool

    package init(hub: EventHub, redactor: Redactor?, insecure: Bool = false) {
        self.hub = hub
        self.redactor = redactor.map(StreamRedactor.init)
        self.insecure = insecure
    }

    /// How long a batch gathers events before it is written: a reader of the lines does not see
    /// 10 ms, and each batch is a timer armed and a thread woken (at the hub's 2 ms, under a
    /// proxy's load, one of each every few requests).
    static let gathering: TimeInterval = 0.01

    /// Writes the header line (which says whether secrets are redacted) and starts following the hub.
    package func start() {
        write(EventLog.headerLine(startedAt: hub.startedAt, redacted: redactor != nil, insecure: insecure) + "\n")
        let subscription = hub.subscribe(label: "reqtop.stdout", delay: Self.gathering) { [self] batch in
            var bytes: [UInt8] = []
            bytes.reserveCapacity(batch.count * 160)
            // By index: `for event in` made a copy of each event before the redactor made its own.
            for index in batch.indices {
                if let redactor {
                    EventLog.append(redactor.redact(batch[index]), to: &bytes)
                } else {
                    EventLog.append(batch[index], to: &bytes)
                }
                bytes.append(UInt8(ascii: "\n"))
            }
            StandardOutput.write(bytes: bytes)
        }
        self.subscription.withLock { $0 = subscription }
    }

    /// Waits until every event published so far is written, then stops following.
    package func finish() {
        hub.waitUntilDelivered()
        subscription.withLock { $0?.cancel() }
    }

    private func write(_ text: String) {
        StandardOutput.write(text)
    }
}
