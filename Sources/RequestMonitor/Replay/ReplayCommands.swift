import Foundation
import RequestOperations

/// The monitor's commands during a replay: nothing can be retried or cancelled, and
/// pause, speed, step and jumps steer the player.
public final class ReplayCommands: QueueCommands {
    let player: ReplayPlayer

    public init(player: ReplayPlayer) {
        self.player = player
    }

    public var canCancel: Bool { false }

    public func perform(_ command: MonitorCommand) -> CommandAnswer {
        switch command {
        case .playback(let action): return CommandAnswer(playback(action))
        case .queue(.setSuspended(let suspended)):
            player.setPaused(suspended)
            return CommandAnswer(suspended ? "replay paused" : "replay resumed")
        case .queue(let command): return CommandAnswer(ok: false, Self.refusal(command))
        }
    }

    /// Why a replay does not do `command`: it shows what happened.
    private static func refusal(_ command: QueueCommand) -> String {
        switch command {
        case .retry: "a replay cannot retry: it shows what happened"
        case .cancel, .cancelAll: "a replay cannot cancel"
        case .releaseBatches: "nothing is held in a replay"
        case .isolate, .closeCircuit: "a replay cannot change a circuit breaker: it shows what happened"
        case .resend: "a replay cannot send: reqtop replay --send re-sends a recording"
        case .toggleFault, .clearFaults: "nothing is injected into a replay: it shows what happened"
        case .addBreakpoint, .clearBreakpoints, .resolveBreakpoint, .setBreakpointEnabled, .removeBreakpoint:
            "a replay has no breakpoints: it shows what happened"
        case .setSuspended: "a replay pauses its player"
        }
    }

    private func playback(_ action: PlaybackAction) -> String {
        switch action {
        case .faster: return "speed \(ReplayPlayer.format(player.faster()))"
        case .slower: return "speed \(ReplayPlayer.format(player.slower()))"
        case .step: return player.step().map { "stepped to \($0.operationID) \($0.payload.name) at \(String(format: "%.3f", $0.time))s" } ?? "at the end"
        case .start:
            player.jumpToStart()
            return "back to the start"
        case .end:
            player.jumpToEnd()
            return "at the end"
        case .seek(let seconds):
            player.seek(to: player.playhead + seconds)
            return "at \(String(format: "%.1f", player.playhead))s"
        case .seekTo(let time):
            player.seek(to: time)
            return "at \(String(format: "%.1f", player.playhead))s"
        }
    }

    /// What the header shows: speed, where the playhead is, and the end.
    public func status() -> PlaybackStatus {
        let where_ = player.isAtEnd ? "END" : (player.isPaused ? "PAUSED" : "PLAYING")
        let skipped = player.skipped
        return PlaybackStatus(text(where_, skipped: skipped), saysPaused: player.isAtEnd || player.isPaused)
    }

    private func text(_ where_: String, skipped: TimeInterval) -> String {
        "REPLAY \(ReplayPlayer.format(player.speed)) \(where_) \(String(format: "%.1f", player.playhead))/\(String(format: "%.1f", player.duration))s" + (player.isDurationKnown ? "" : " reading")
            + (skipped > 0 ? " (\(Self.duration(skipped)) idle skipped)" : "")
            + (player.problem.map { " · stopped reading: \($0)" } ?? "")
    }

    /// "58m12s", "2h03m", "7.5s".
    static func duration(_ seconds: TimeInterval) -> String {
        if seconds < 60 { return String(format: "%.1fs", seconds) }
        let whole = Int(seconds.rounded())
        if whole < 3600 { return "\(whole / 60)m\(String(format: "%02d", whole % 60))s" }
        return "\(whole / 3600)h\(String(format: "%02d", (whole % 3600) / 60))m"
    }
}
