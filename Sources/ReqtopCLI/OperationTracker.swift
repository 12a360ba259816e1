import Foundation
import RequestOperations
import Synchronization

/// The operations a session added (to cancel what still runs when it ends), and the
/// summary of everything the queue ran, counted from its events by the one rule of
/// ``SessionTally`` (token refreshes and re-runs included, as a replay counts them). Shared by
/// the headless and the monitor sessions.
final class OperationTracker: Sendable {
    private let operations = Mutex<[RequestOperation]>([])
    private let hub: EventHub
    private let tally = Mutex(SessionTally())
    private let subscription = Mutex<EventSubscription?>(nil)

    init(hub: EventHub) {
        self.hub = hub
        let subscription = hub.subscribe(label: "reqtop.tally") { [weak self] batch in self?.tally.withLock { $0.add(batch) } }
        self.subscription.withLock { $0 = subscription }
    }

    deinit {
        subscription.withLock { $0?.cancel() }
    }

    func track(_ operation: RequestOperation) {
        operations.withLock { $0.append(operation) }
    }

    var all: [RequestOperation] { operations.withLock { $0 } }

    /// Cancels every operation still running.
    func cancelRunning(by who: String) {
        for operation in all where operation.result == nil {
            operation.cancel(by: who)
        }
    }

    /// The summary once every operation has ended (after every event has been counted).
    var summary: RunSummary {
        hub.waitUntilDelivered()
        // The session's time is its events' (as a replay measures it), not the wall clock's.
        return RunSummary(tally: tally.withLock { $0 }, duration: tally.withLock { $0.latest })
    }
}
