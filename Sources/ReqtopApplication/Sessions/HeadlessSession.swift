import Foundation
import Dispatch
import ProcessSignals
import RequestMonitor
import RequestEventFormat
import RequestOperations
import Synchronization

/// Runs a set of operations without a terminal UI: events as JSON lines on stdout, a
/// summary on stderr, and an exit status. Ctrl-C or SIGTERM cancels what is still running
/// (at once, or after a grace: ``SignalStop``), so the log still ends with every operation's
/// `finished` event.
package final class HeadlessSession: Sendable {
    package let queue: RequestQueue
    private let output: JSONLinesOutput
    private let tracker: OperationTracker
    private let interrupted = StopFlag()
    private let onSignal: SignalStop

    package init(queue: RequestQueue, redactor: Redactor?, onSignal: SignalStop = .cancel) {
        self.queue = queue
        self.onSignal = onSignal
        self.tracker = OperationTracker(hub: queue.events)
        self.output = JSONLinesOutput(hub: queue.events, redactor: redactor, insecure: !queue.environment.transport.verifiesCertificates)
    }

    package var wasInterrupted: Bool { interrupted.isRaised }

    /// Returns when a signal stops the session.
    package func waitUntilInterrupted() { interrupted.wait() }

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
                let first = interrupted.raise()
                if first, case .drain(let grace, let begin) = onSignal {
                    drain(within: grace, begin: begin)
                } else {
                    cancelEverything()
                }
            }
        }
        body()
        queue.waitUntilAllOperationsAreFinished()
        signals.forEach { $0.cancel() }
        output.finish()
        return tracker.summary
    }

    private func cancelEverything() {
        tracker.cancelRunning(by: "signal")
        // And what the session did not add itself (a token refresh).
        queue.cancelAll(by: "signal")
    }

    /// The first signal of a draining session: nothing new is taken (`begin`), what runs may
    /// end by itself within `grace`, and is cancelled then; a second signal cancels it at once.
    private func drain(within grace: TimeInterval, begin: @Sendable () -> Void) {
        begin()
        let running = queue.operations.count { $0.result == nil }
        guard running > 0 else { return }
        ErrorOutput.print(SignalStop.stoppingLine(running: running, grace: grace, hurry: "a second Ctrl-C"))
        DispatchQueue.global().asyncAfter(deadline: .now() + grace) { [self] in cancelEverything() }
    }
}
