import Foundation
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
    private let quitting = Mutex(false)
    /// Called at `q` before what runs is cancelled: a proxy stops taking requests, so none
    /// comes in after the cancel to run on (and be waited for) while the monitor is gone.
    private let stopTaking: (@Sendable () -> Void)?

    /// Secrets out of what the screen shows (it may be shared or recorded); nil with --no-redact.
    private let redactor: StreamRedactor?

    package init(queue: RequestQueue, source: String, color: Bool, redactor: Redactor?, stopTaking: (@Sendable () -> Void)? = nil) throws {
        self.stopTaking = stopTaking
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

    package var hasQuit: Bool { quitting.withLock { $0 } }

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
        quitting.withLock { $0 = true }
        subscription.cancel()
        // Wait for `body` to see the quit, so that it adds nothing after the sweep below.
        bodyDone.wait()
        stopTaking?()
        tracker.cancelRunning(by: "quit")
        // And what the session did not add itself (a token refresh).
        queue.cancelAll(by: "quit")
        queue.waitUntilAllOperationsAreFinished()
        return tracker.summary
    }
}
