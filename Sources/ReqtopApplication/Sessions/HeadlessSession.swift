import Foundation
import Dispatch
import ProcessSignals
import RequestMonitor
import RequestEventFormat
import RequestOperations
import Synchronization

/// Runs a set of operations without a terminal UI: events as JSON lines on stdout, a
/// summary on stderr, and an exit status. Ctrl-C or SIGTERM cancels what is still running,
/// so the log still ends with every operation's `finished` event.
package final class HeadlessSession: Sendable {
    package let queue: RequestQueue
    private let output: JSONLinesOutput
    private let tracker: OperationTracker
    private let interrupted = Mutex(false)

    package init(queue: RequestQueue, redactor: Redactor?) {
        self.queue = queue
        self.tracker = OperationTracker(hub: queue.events)
        self.output = JSONLinesOutput(hub: queue.events, redactor: redactor, insecure: !queue.environment.transport.verifiesCertificates)
    }

    package var wasInterrupted: Bool { interrupted.withLock { $0 } }

    package func track(_ operation: RequestOperation) {
        tracker.track(operation)
        // Interrupted while operations were still being added: none of them starts.
        if wasInterrupted { operation.cancel(by: "signal") }
    }

    /// Runs `body` (which adds operations, and may keep adding them until it returns),
    /// waits for every operation, and returns the summary.
    package func run(_ body: () -> Void) -> RunSummary {
        output.start()
        let signals = [SIGINT, SIGTERM, SIGHUP].map { number in
            SignalCenter.handle(number) { [self] in
                interrupted.withLock { $0 = true }
                tracker.cancelRunning(by: "signal")
                // And what the session did not add itself (a token refresh).
                queue.cancelAll(by: "signal")
            }
        }
        body()
        queue.waitUntilAllOperationsAreFinished()
        signals.forEach { $0.cancel() }
        output.finish()
        return tracker.summary
    }
}
