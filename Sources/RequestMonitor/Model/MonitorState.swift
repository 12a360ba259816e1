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
    /// A replay's speed and position, for the header.
    public var playback: String?
    public var quit = false

    public init() {}
}

/// What the monitor asks of the queue it shows, each answered with a line for the person.
/// The live queue implements it directly, a replay steers its player with it, and an attach
/// client will implement it over a socket.
public protocol QueueCommands: Sendable {
    /// Skips a backoff, or runs a finished operation again.
    func retry(_ id: String) -> String
    func cancel(_ id: String) -> String
    func cancelAll() -> String
    /// False where nothing can be cancelled (a replay), so the monitor does not ask.
    var canCancel: Bool { get }
    func setSuspended(_ suspended: Bool) -> String
    /// Releases every batch that holds requests now.
    func releaseBatches() -> String
    /// Replay controls; elsewhere they only say so.
    func playback(_ action: PlaybackAction) -> String
}

public enum PlaybackAction: Sendable, Equatable {
    case faster, slower, step, start, end
}

extension QueueCommands {
    public var canCancel: Bool { true }

    public func releaseBatches() -> String {
        "no batches here"
    }

    public func playback(_ action: PlaybackAction) -> String {
        "only a replay has a speed, steps and jumps"
    }
}
