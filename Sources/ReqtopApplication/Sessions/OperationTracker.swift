import Foundation
import RequestOperations
import Synchronization

/// The operations a session added (to cancel what still runs when it ends), and the
/// summary of everything the queue ran, counted from its events by the one rule of
/// ``SessionTally`` (token refreshes and re-runs included, as a replay counts them). Shared by
/// the headless and the monitor sessions.
package final class OperationTracker: Sendable {
    /// Operations that may still run. Finished ones are let go as new ones come (a monitor
    /// runs for days: kept, each held its request, result and body — about 30 KB an
    /// operation of the demo, the whole of its memory growth).
    private let operations = Mutex(Running())
    private let hub: EventHub
    private let tally = Mutex(SessionTally())
    private let subscription = Mutex<EventSubscription?>(nil)

    package init(hub: EventHub) {
        self.hub = hub
        // Counted for the summary at the end (which waits for every event): no hurry.
        let subscription = hub.subscribe(label: "reqtop.tally", delay: JSONLinesOutput.gathering) { [weak self] batch in
            self?.tally.withLock { $0.add(batch) }
        }
        self.subscription.withLock { $0 = subscription }
    }

    deinit {
        subscription.withLock { $0?.cancel() }
    }

    package func track(_ operation: RequestOperation) {
        operations.withLock { $0.add(operation) }
    }

    /// Every tracked operation not known to have finished.
    package var all: [RequestOperation] { operations.withLock { $0.list } }

    /// Cancels every operation still running.
    package func cancelRunning(by who: String) {
        for operation in all where operation.result == nil {
            operation.cancel(by: who)
        }
    }

    /// The summary once every operation has ended (after every event has been counted).
    package var summary: RunSummary {
        hub.waitUntilDelivered()
        // The session's time is its events' (as a replay measures it), not the wall clock's.
        return RunSummary(tally: tally.withLock { $0 }, duration: tally.withLock { $0.latest })
    }
}

/// The tracked operations; the finished ones are dropped whenever the list has doubled
/// since the last sweep, so a sweep costs O(1) per operation added.
private struct Running {
    package private(set) var list: [RequestOperation] = []
    private var sweepAt = 64

    mutating func add(_ operation: RequestOperation) {
        list.append(operation)
        guard list.count >= sweepAt else { return }
        list.removeAll { $0.result != nil }
        sweepAt = max(64, list.count * 2)
    }
}
