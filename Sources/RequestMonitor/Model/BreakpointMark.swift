/// A breakpoint as the monitor knows it from its events: the list screen's row (`L`).
public struct BreakpointMark: Sendable, Equatable {
    public var id: Int
    public var rule: String
    public var by: String
    public var enabled: Bool
    /// Stops after the answer rather than before sending.
    public var afterResponse: Bool
}
