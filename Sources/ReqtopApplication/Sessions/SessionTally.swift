import Foundation
import RequestEventFormat
import RequestOperations

/// The one counting rule for every summary — a live run's, a replay's — and for the
/// monitor's "ops": every operation that appears in the events counts once, with the
/// outcome of its `finished` event, whoever added it (the plan, a token refresh, a re-run
/// `~2` from the monitor); attempts are the attempts that started (`started` events).
///
/// Before, a live run counted only the operations it had added itself, so its summary said
/// 196 where a replay of its own recording said 204.
package struct SessionTally: Sendable, Equatable {
    /// Operations seen, each once.
    package private(set) var operations = 0
    private var finished: [RequestOutcome: Int] = [:]
    package private(set) var attempts = 0
    /// The latest event time.
    package private(set) var latest: TimeInterval = 0
    /// Operations seen and not finished: all the ids a tally holds, beside the last few that
    /// finished. It held every id it had seen, with its outcome — a proxy that ran all day
    /// grew by them — and hashed each event's id (#58).
    private var open: Set<String> = []
    /// The ids of the last operations that finished, so an event that comes after an
    /// operation's `finished` does not count it again: in order, to forget the oldest, and as a set.
    private var recent = RecentKeys<String>(limit: SessionTally.recentLimit)
    private var recentSet: Set<String> = []
    /// The last event's operation: its next events (they come in runs) are not looked up.
    private var lastSeen = ""

    static let recentLimit = 1024

    package init() {}

    package init(_ events: [RequestEvent]) {
        add(events)
    }

    package mutating func add(_ events: [RequestEvent]) {
        // By index, each event read where it is: `for event in` copied every event (its
        // payload's strings and tables retained and released), for the few fields read here.
        for index in events.indices {
            // Host-level events (`op` empty) are no operation's.
            guard !events[index].operationID.isEmpty else { continue }
            if events[index].operationID != lastSeen {
                see(events[index].operationID)
                lastSeen = events[index].operationID
            }
            switch events[index].payload {
            case .finished(let outcome, _, _, _, _): finish(events[index].operationID, outcome)
            // A hedge is an attempt sent alongside another (no `started` of its own).
            case .started, .hedged: attempts += 1
            default: break
            }
            latest = max(latest, events[index].time)
        }
    }

    private mutating func see(_ id: String) {
        guard !open.contains(id), !recentSet.contains(id) else { return }
        open.insert(id)
        operations += 1
    }

    /// Counts the operation's outcome, once (a second `finished` changes nothing).
    private mutating func finish(_ id: String, _ outcome: RequestOutcome) {
        guard open.remove(id) != nil else { return }
        finished[outcome, default: 0] += 1
        recentSet.insert(id)
        if let oldest = recent.append(id) { recentSet.remove(oldest) }
    }

    package func count(_ outcome: RequestOutcome) -> Int {
        finished[outcome] ?? 0
    }

    /// Operations with no `finished` event (a recording cut short).
    package var unfinished: Int { open.count }

    /// The operation ids the tally holds now: those not finished and the last
    /// ``recentLimit`` that did (for tests of its memory).
    var heldIDs: Int { open.count + recentSet.count }
}
