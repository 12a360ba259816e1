/// One program of a merged view (`reqtop attach --all`), as the Hosts screen's PROGRAMS
/// panel shows it: whether it is still there, its queue and how busy it is. Handed in with
/// each frame by whoever attached the programs (the model has only their events).
public struct ProgramLine: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        case attached, paused, ended
    }

    /// `name pid`, as the PROGRAM column and the events' `program` say it.
    public var label: String
    public var state: State
    /// Live operations (running, waiting or queued) the program has now.
    public var live: Int
    public var eventsPerSecond: Double
    /// Faults injected in it (by any monitor).
    public var faults: Int
    /// It takes no commands from this monitor.
    public var readOnly: Bool

    public init(label: String, state: State, live: Int, eventsPerSecond: Double, faults: Int, readOnly: Bool) {
        self.label = label
        self.state = state
        self.live = live
        self.eventsPerSecond = eventsPerSecond
        self.faults = faults
        self.readOnly = readOnly
    }
}
