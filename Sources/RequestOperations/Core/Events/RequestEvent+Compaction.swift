/// What is kept of an operation's events where memory matters (the monitor's rows, the
/// endpoint's journal for late monitors).
extension Array where Element == RequestEvent {
    /// Appends `event`, merging a `data` event into a `data` event of the same attempt right
    /// before it (bytes summed, the later time): a running download's thousands of them are
    /// kept as one. True when it merged.
    @discardableResult
    public mutating func appendMergingData(_ event: RequestEvent) -> Bool {
        guard case .data(let bytes) = event.payload, let last, case .data(let before) = last.payload,
              last.attempt == event.attempt else {
            append(event)
            return false
        }
        self[count - 1] = RequestEvent(time: event.time, operationID: event.operationID, attempt: event.attempt,
                                       payload: .data(bytes: before + bytes), program: event.program)
        return true
    }

    /// The events with each run of `data` events of one attempt merged into one (at the time
    /// of the run's last chunk, with the run's bytes), and how many events the merging
    /// removed. What a person reads does not change — bytes per attempt, the end of the
    /// download — and a download of a thousand chunks costs one event instead of a thousand.
    /// The result holds no spare capacity.
    public func mergingDataRuns() -> (events: [RequestEvent], removed: Int) {
        var out: [RequestEvent] = []
        out.reserveCapacity(count)
        for event in self { out.appendMergingData(event) }
        guard out.count < count else { return (out, 0) }
        var exact: [RequestEvent] = []
        exact.reserveCapacity(out.count)
        exact.append(contentsOf: out)
        return (exact, count - out.count)
    }
}
