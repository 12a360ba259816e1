import RequestOperations

/// What reaches the screen loop from other threads, in the order it came.
enum ScreenInput: Sendable {
    case events([RequestEvent])
    /// Forget the model (a replay jumping back).
    case reset
    /// An answer to a command, or a pause made elsewhere.
    case action(MonitorAction)
    case resize
    /// The source adds nothing more (see ``MonitorScreen/sourceComplete(_:)``).
    case complete(String)
    /// Ctrl-Z: give the terminal back, stop until `fg`, take it again.
    case suspend
    case stop
}
