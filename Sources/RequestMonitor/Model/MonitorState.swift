import Foundation

/// What the person has chosen: selection, filter, sort, follow, which screen is showing.
/// Separate from ``QueueModel`` (what happened) so that replays and tests share one model.
public struct MonitorState: Sendable, Equatable {
    public enum Screen: Sendable, Equatable {
        case table
        case detail(id: String, tab: DetailTab)
    }

    public enum DetailTab: String, Sendable, CaseIterable {
        case events = "Events", request = "Request", response = "Response", retries = "Retries", timing = "Timing"
    }

    public enum Sort: String, Sendable, CaseIterable {
        case arrival, state, duration, host
    }

    /// A question waiting for y/n.
    public enum Confirmation: Sendable, Equatable {
        case cancel(id: String)
        case cancelAll
    }

    public var screen = Screen.table
    public var selectedID: String?
    /// The first visible row of the table.
    public var scroll = 0
    public var filter = ""
    /// The filter being typed, while `/` is active.
    public var filterDraft: String?
    public var sort = Sort.arrival
    /// Keep the newest operation selected and in view.
    public var follow = true
    public var paused = false
    public var showHelp = false
    public var confirmation: Confirmation?
    /// A short message on the bottom line ("retrying w1-flaky"), with when it was set.
    public var flash: String?
    public var quit = false

    public init() {}
}

/// What the monitor asks of the queue it shows. The live queue implements it directly;
/// a replay has none; an attach client will implement it over a socket.
public protocol QueueCommands: Sendable {
    /// Skips a backoff, or runs a finished operation again; returns what happened.
    func retry(_ id: String) -> String
    func cancel(_ id: String) -> String
    func cancelAll() -> String
    func setSuspended(_ suspended: Bool)
}
