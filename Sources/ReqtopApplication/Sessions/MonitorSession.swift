import Foundation
import ProcessSignals
import RequestMonitor
import RequestEventFormat
import RequestOperations
import Synchronization

/// Runs operations with the live monitor on the terminal: the monitor follows the queue's
/// events and sends its commands back to the queue. Returns the summary once the person
/// quits; operations still running then are cancelled, so nothing is left half done.
package final class MonitorSession: Sendable {
    package let queue: RequestQueue
    package let commands: LiveQueueCommands
    private let tracker: OperationTracker
    private let screen: MonitorScreen
    private let quitting = StopFlag()
    /// What `q` does before what runs is cancelled: a proxy's drain stops taking requests (none
    /// comes in after the cancel to run on while the monitor is gone) and lets what is in
    /// flight end for its grace (an answer streaming to its client reaches it whole, and is
    /// recorded as it was).
    private let onQuit: SignalStop

    /// Secrets out of what the screen shows (it may be shared or recorded); nil with --no-redact.
    private let redactor: StreamRedactor?

    package init(queue: RequestQueue, source: String, color: Bool, redactor: Redactor?, onQuit: SignalStop = .cancel) throws {
        self.onQuit = onQuit
        self.redactor = redactor.map(StreamRedactor.init)
        self.queue = queue
        self.tracker = OperationTracker(hub: queue.events)
        let commands = LiveQueueCommands(queue: queue)
        self.commands = commands
        let events = queue.events
        var options = MonitorScreen.Options(source: source, color: color, clock: { events.elapsed() })
        let faults = queue.faults
        options.faultsActive = { faults.isActive }
        screen = try MonitorScreen(options: options, commands: commands)
    }

    package var hasQuit: Bool { quitting.isRaised }

    /// Returns when the person quits.
    package func waitUntilQuit() { quitting.wait() }

    package func track(_ operation: RequestOperation) {
        tracker.track(operation)
    }

    /// Shows the monitor until `q`; `body` runs on a background thread meanwhile (adding
    /// operations, for as long as it likes: it should stop when ``hasQuit`` turns true).
    package func run(_ body: @escaping @Sendable () -> Void) -> RunSummary {
        let subscription = queue.events.subscribe(label: "reqtop.monitor") { [screen, redactor] batch in
            screen.feed(redactor?.redact(batch) ?? batch)
        }
        let bodyDone = DispatchSemaphore(value: 0)
        let worker = Thread { [screen] in
            body()
            // Everything is added; the header says ENDED whenever all of it has finished.
            screen.sourceComplete("ENDED: every operation finished, q quits")
            bodyDone.signal()
        }
        worker.start()
        screen.run()
        quitting.raise()
        subscription.cancel()
        // Wait for `body` to see the quit, so that it adds nothing after the sweep below.
        bodyDone.wait()
        onQuit.stopsTaking?()
        letInFlightEnd(within: onQuit.grace)
        tracker.cancelRunning(by: "quit")
        // And what the session did not add itself (a token refresh).
        queue.cancelAll(by: "quit")
        queue.waitUntilAllOperationsAreFinished()
        return tracker.summary
    }

    /// Waits up to `grace` for what is in flight to end by itself, saying so on the terminal
    /// the monitor just gave back; Ctrl-C ends the wait (and the rest is cancelled).
    private func letInFlightEnd(within grace: TimeInterval) {
        let running = queue.operations.count { $0.result == nil }
        guard grace > 0, running > 0 else { return }
        ErrorOutput.print(SignalStop.stoppingLine(running: running, grace: grace, hurry: "Ctrl-C"))
        let hurry = DispatchSemaphore(value: 0)
        let interrupt = SignalCenter.handle(SIGINT) { hurry.signal() }
        defer { interrupt.cancel() }
        let deadline = Date().addingTimeInterval(grace)
        while Date() < deadline, queue.operations.contains(where: { $0.result == nil }) {
            if hurry.wait(timeout: .now() + 0.02) == .success { return }
        }
    }
}
