import RequestOperations

/// The events of every live operation and of the most recently finished ones: what a
/// monitor that attaches late is shown first, so it sees what a live monitor would. Also
/// what `reqtop attach --all` keeps of each program, to show the others again when one of
/// them fell behind and starts over from a fresh snapshot.
public struct OperationJournal: Sendable {
    /// Finished operations kept for late monitors.
    public let finishedLimit: Int
    private(set) var events: [String: [RequestEvent]] = [:]
    /// Operations in order of their first event.
    private var order: [String] = []
    private var finished: [String] = []
    private var finishedHead = 0
    /// The last host-level event (`op` empty) of each kind for each host: its breaker's state,
    /// its rate-limit pause, its retry budget. One slot per kind, so a pause does not hide
    /// an open breaker from a monitor that attaches later.
    private var hostEvents: [String: RequestEvent] = [:]

    public init(finishedLimit: Int = 1000) {
        self.finishedLimit = finishedLimit
    }

    public var liveCount: Int { events.count - (finished.count - finishedHead) }

    public mutating func apply(_ batch: [RequestEvent]) {
        for event in batch {
            if event.operationID.isEmpty {
                if let host = event.payload.host {
                    let kind = event.payload.name.hasPrefix("circuit") ? "circuit" : event.payload.name
                    hostEvents["\(kind) \(host)"] = event
                }
                continue
            }
            if events[event.operationID] == nil { order.append(event.operationID) }
            events[event.operationID, default: []].appendMergingData(event)
            if case .finished = event.payload {
                events[event.operationID] = (events[event.operationID] ?? []).mergingDataRuns().events
                finished.append(event.operationID)
                if finished.count - finishedHead > finishedLimit {
                    events[finished[finishedHead]] = nil
                    finishedHead += 1
                }
            }
        }
        if finishedHead > 1024 {
            finished.removeFirst(finishedHead)
            finishedHead = 0
            order.removeAll { events[$0] == nil }
        }
    }

    /// Every kept event, operation by operation in arrival order.
    public var snapshot: (operations: Int, events: [RequestEvent]) {
        // Each host's breaker as it stands now, then the operations.
        var out = hostEvents.values.sorted { $0.time < $1.time }
        var count = 0
        for id in order {
            guard let list = events[id] else { continue }
            out += list
            count += 1
        }
        return (count, out)
    }
}
