import RequestEndpoint

/// Which of an endpoint's events a recording (`--record`) takes. After `missed` (this reader
/// fell behind) the endpoint sends a fresh snapshot, and on a reconnection to the same program
/// it sends one first: either repeats events already recorded, up to the snapshot's end. One
/// rule for the three readers that record (headless, one monitor, many programs), so a
/// recording never holds an event twice.
package struct SnapshotRepeat {
    /// Whether the event read now is new (not part of a repeated snapshot).
    package private(set) var recordsEvents: Bool

    /// - Parameter repeating: the first snapshot repeats what was recorded (a reconnection).
    package init(repeating: Bool = false) {
        recordsEvents = !repeating
    }

    /// Takes note of `message`, read before the events that follow it.
    package mutating func note(_ message: EndpointClient.Message) {
        switch message {
        case .missed:
            recordsEvents = false
        case .snapshotEnd:
            recordsEvents = true
        case .hello, .snapshot, .event, .reply, .error, .suspended, .faults, .unreadable:
            break
        }
    }
}
