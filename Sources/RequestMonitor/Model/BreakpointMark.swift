/// A breakpoint as the monitor knows it from its events: the list screen's row (`L`).
public struct BreakpointMark: Sendable, Equatable {
    public var id: Int
    public var rule: String
    public var by: String
    public var enabled: Bool
    /// Stops after the answer rather than before sending.
    public var afterResponse: Bool
    /// The program it stops requests in, in a merged view of several (`attach --all`).
    public var program: String? = nil

    /// Who set it, and where in a merged view: `attached monitor 7 in api 4121`.
    public var setter: String { program.map { "\(by) in \($0)" } ?? by }
}
