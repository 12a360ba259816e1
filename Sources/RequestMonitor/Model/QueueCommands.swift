/// Carries out the monitor's commands on what it shows: the live queue
/// (``LiveQueueCommands``), a replay's player (``ReplayCommands``) or an attached program
/// over its socket. Called off the drawing thread, so an answer may take its time.
public protocol QueueCommands: Sendable {
    /// False where nothing can be cancelled (a replay), so the monitor does not ask.
    var canCancel: Bool { get }
    /// True for a program attached read-only (its endpoint refuses every command from this
    /// monitor): said at the key, not after a question whose answer would be refused.
    var readOnly: Bool { get }
    func perform(_ command: MonitorCommand) -> CommandAnswer
}

extension QueueCommands {
    public var canCancel: Bool { true }
    public var readOnly: Bool { false }

    /// What a source without replay controls says to them.
    public static var noPlayback: CommandAnswer {
        CommandAnswer(ok: false, "only a replay has a speed, steps and jumps")
    }
}
