import Dispatch
import Foundation
import RequestMonitor
import RequestOperations
import Synchronization

/// Runs a set of operations without a terminal UI: events as JSON lines on stdout, a
/// summary on stderr, and an exit status. Ctrl-C or SIGTERM cancels what is still running,
/// so the log still ends with every operation's `finished` event.
final class HeadlessSession: Sendable {
    let queue: RequestQueue
    private let output: JSONLinesOutput
    private let operations = Mutex<[RequestOperation]>([])
    private let interrupted = Mutex(false)

    init(queue: RequestQueue) {
        self.queue = queue
        self.output = JSONLinesOutput(hub: queue.events)
    }

    /// Operations added so far, in order.
    var all: [RequestOperation] { operations.withLock { $0 } }

    var wasInterrupted: Bool { interrupted.withLock { $0 } }

    func track(_ operation: RequestOperation) {
        operations.withLock { $0.append(operation) }
    }

    /// Runs `body` (which adds operations, and may keep adding them until it returns),
    /// waits for every operation, and returns the summary.
    func run(_ body: () -> Void) -> RunSummary {
        let start = Date()
        output.start()
        let signals = [SIGINT, SIGTERM, SIGHUP].map { number in
            SignalCenter.handle(number) { [self] in
                interrupted.withLock { $0 = true }
                for operation in all { operation.cancel(by: "signal") }
            }
        }
        body()
        queue.waitUntilAllOperationsAreFinished()
        signals.forEach { $0.cancel() }
        output.finish()
        let results = all.compactMap(\.result)
        return RunSummary(results: results, duration: Date().timeIntervalSince(start))
    }
}
