import Foundation
import RequestOperations

/// The one counting rule for every summary — a live run's, a replay's — and for the
/// monitor's "ops": every operation that appears in the events counts once, with the
/// outcome of its `finished` event, whoever added it (the plan, a token refresh, a re-run
/// `~2` from the monitor); attempts are the attempts that started (`started` events).
///
/// Before, a live run counted only the operations it had added itself, so its summary said
/// 196 where a replay of its own recording said 204.
package struct SessionTally: Sendable, Equatable {
    package private(set) var outcomes: [String: RequestOutcome] = [:]
    /// Operations in the order they first appeared.
    package private(set) var order: [String] = []
    private var seen: Set<String> = []
    package private(set) var attempts = 0
    /// The latest event time.
    package private(set) var latest: TimeInterval = 0

    package init() {}

    package init(_ events: [RequestEvent]) {
        add(events)
    }

    package mutating func add(_ events: [RequestEvent]) {
        for event in events {
            // Host-level events (`op` empty) are no operation's.
            guard !event.operationID.isEmpty else { continue }
            if seen.insert(event.operationID).inserted { order.append(event.operationID) }
            switch event.payload {
            case .finished(let outcome, _, _, _, _): outcomes[event.operationID] = outcome
            // A hedge is an attempt sent alongside another (no `started` of its own).
            case .started, .hedged: attempts += 1
            default: break
            }
            latest = max(latest, event.time)
        }
    }

    package func count(_ outcome: RequestOutcome) -> Int {
        outcomes.values.filter { $0 == outcome }.count
    }

    /// Operations with no `finished` event (a recording cut short).
    package var unfinished: Int { order.count - outcomes.count }
}
