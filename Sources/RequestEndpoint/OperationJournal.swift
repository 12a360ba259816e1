import RequestOperations

/// The events of every live operation and of the most recently finished ones: what a
/// monitor that attaches late is shown first, so it sees what a live monitor would.
struct OperationJournal {
    /// Finished operations kept for late monitors.
    let finishedLimit: Int
    private(set) var events: [String: [RequestEvent]] = [:]
    /// Operations in order of their first event.
    private var order: [String] = []
    private var finished: [String] = []
    private var finishedHead = 0

    init(finishedLimit: Int = 1000) {
        self.finishedLimit = finishedLimit
    }

    var liveCount: Int { events.count - (finished.count - finishedHead) }

    mutating func apply(_ batch: [RequestEvent]) {
        for event in batch {
            if events[event.operationID] == nil { order.append(event.operationID) }
            events[event.operationID, default: []].append(event)
            if case .finished = event.payload {
                events[event.operationID] = Self.compacted(events[event.operationID] ?? [])
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

    /// A finished operation's events with each run of `data` events merged into one (at the
    /// time of the run's last chunk): what the monitor shows does not change, and a download
    /// of a thousand chunks costs late monitors one line instead of a thousand.
    static func compacted(_ events: [RequestEvent]) -> [RequestEvent] {
        var out: [RequestEvent] = []
        out.reserveCapacity(events.count)
        for event in events {
            if case .data(let bytes) = event.payload, let last = out.last, case .data(let before) = last.payload, last.attempt == event.attempt {
                out[out.count - 1] = RequestEvent(time: event.time, operationID: event.operationID, attempt: event.attempt,
                                                  payload: .data(bytes: before + bytes))
            } else {
                out.append(event)
            }
        }
        return out
    }

    /// Every kept event, operation by operation in arrival order.
    var snapshot: (operations: Int, events: [RequestEvent]) {
        var out: [RequestEvent] = []
        var count = 0
        for id in order {
            guard let list = events[id] else { continue }
            out += list
            count += 1
        }
        return (count, out)
    }
}
