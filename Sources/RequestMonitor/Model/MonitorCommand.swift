import Foundation
import RequestEventFormat
import RequestOperations
/// What the monitor asks of the queue it shows (live, attached or a replay). The update
/// never carries one out: it returns it as a ``MonitorEffect``, the screen runs it off the
/// drawing thread through ``QueueCommands`` and feeds the ``CommandAnswer`` back as
/// ``MonitorAction/answered(_:_:)``.
public enum MonitorCommand: Sendable, Equatable {
    /// A command for the queue shown (live or attached), in the engine's one vocabulary.
    case queue(QueueCommand)
    /// Replay controls.
    case playback(PlaybackAction)
}

public enum PlaybackAction: Sendable, Equatable {
    case faster, slower, step, start, end
    /// Move the playhead by this many seconds of session time (back when negative).
    case seek(TimeInterval)
    /// Move the playhead to this session time.
    case seekTo(TimeInterval)
}

/// A command's answer, in words for the bottom line.
public struct CommandAnswer: Sendable, Equatable {
    /// False when nothing was done (refused, not found, no answer).
    public var ok: Bool
    public var message: String

    public init(ok: Bool = true, _ message: String) {
        self.ok = ok
        self.message = message
    }
}

/// What the update asks the screen to do for it.
public enum MonitorEffect: Sendable, Equatable {
    case command(MonitorCommand)
    /// Put `text` on the clipboard (OSC 52) and in a file named for `name`; `body`, a
    /// binary body the text names as `@FILE`, beside it.
    case copy(text: String, name: String, body: Data?)
    /// Open `entry` (operation `id`'s request) in the person's editor; send what comes back
    /// as a new operation, or, `atBreakpoint`, as the stopped operation's own attempt.
    case edit(id: String, entry: RequestEntry, atBreakpoint: Bool)
}
