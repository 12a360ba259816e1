import Dispatch
import Foundation
import RequestOperations
import Synchronization

/// Plays recorded events on their original timeline into a ``MonitorScreen``: the same
/// model and view as live, so the end of a replay looks as the live run did at its end.
///
/// Speed runs from 0.25× to 16×; it can pause, step to the next event, and jump to the
/// start or the end. A driver thread ticks every 20 ms and hands over what fell due.
public final class ReplayPlayer: Sendable {
    /// The steps `+` and `-` move between.
    public static let speeds: [Double] = [0.25, 0.5, 1, 2, 4, 8, 16]
    /// Any speed in this range may be asked for (`--speed 3`); `+` and `-` go to the next step.
    public static let speedRange: ClosedRange<Double> = 0.25...16

    private struct State {
        var position = 0
        var playhead: TimeInterval = 0
        var speed = 1.0
        var paused = false
        var stopped = false
        var lastTick = DispatchTime.now().uptimeNanoseconds
        /// Session time jumped over because nothing happened in it.
        var skipped: TimeInterval = 0
    }

    /// A stretch longer than this with no event is skipped (to a second before the next
    /// event) and counted in ``skipped``: a browser HAR with an hour between two page loads
    /// took an hour at 1×.
    public static let idleGapLimit: TimeInterval = 5

    private let events: [RequestEvent]
    private let state: Mutex<State>
    private let output: @Sendable (ReplayOutput) -> Void

    /// What the player hands to the screen.
    public enum ReplayOutput: Sendable {
        case events([RequestEvent])
        /// Forget everything shown: the replay starts over.
        case reset
    }

    public init(events: [RequestEvent], speed: Double = 1, output: @escaping @Sendable (ReplayOutput) -> Void) {
        self.events = events.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        self.state = Mutex(State(speed: Self.speedRange.contains(speed) ? speed : 1))
        self.output = output
    }

    /// Session time the replay has reached: the screen's clock.
    public var playhead: TimeInterval { state.withLock { $0.playhead } }
    public var speed: Double { state.withLock { $0.speed } }
    public var isPaused: Bool { state.withLock { $0.paused } }
    public var isAtEnd: Bool { state.withLock { $0.position >= events.count } }
    public var duration: TimeInterval { events.last?.time ?? 0 }
    /// Idle session time skipped so far.
    public var skipped: TimeInterval { state.withLock { $0.skipped } }

    /// Starts the driver thread; returns at once.
    public func start() {
        let thread = Thread { [self] in
            while !state.withLock({ $0.stopped }) {
                tick()
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
        thread.start()
    }

    public func stop() {
        state.withLock { $0.stopped = true }
    }

    /// Advances the playhead by the time passed (times the speed) and hands over what is due.
    func tick(now: UInt64 = DispatchTime.now().uptimeNanoseconds) {
        let due = state.withLock { state -> ArraySlice<RequestEvent> in
            let elapsed = Double(now &- state.lastTick) / 1e9
            state.lastTick = now
            guard !state.paused, state.position < events.count else { return [] }
            state.playhead += elapsed * state.speed
            let start = state.position
            while state.position < events.count, events[state.position].time <= state.playhead { state.position += 1 }
            if state.position < events.count, events[state.position].time - state.playhead > Self.idleGapLimit {
                let jump = events[state.position].time - 1 - state.playhead
                state.playhead += jump
                state.skipped += jump
            }
            // At the end the playhead stands at the last event, never past it ("END 1.3/1.1s").
            if state.position >= events.count { state.playhead = duration }
            return events[start..<state.position]
        }
        if !due.isEmpty { output(.events(Array(due))) }
    }

    public func setPaused(_ paused: Bool) {
        state.withLock { $0.paused = paused }
    }

    @discardableResult
    public func faster() -> Double { changeSpeed(by: 1) }

    @discardableResult
    public func slower() -> Double { changeSpeed(by: -1) }

    private func changeSpeed(by step: Int) -> Double {
        state.withLock { state in
            // From a speed between steps (3×), + goes to the next step up (4×), - down (2×).
            let next = step > 0 ? Self.speeds.first { $0 > state.speed } : Self.speeds.last { $0 < state.speed }
            state.speed = next ?? state.speed
            return state.speed
        }
    }

    /// Pauses and hands over exactly the next event.
    public func step() -> RequestEvent? {
        let next = state.withLock { state -> RequestEvent? in
            state.paused = true
            guard state.position < events.count else { return nil }
            let event = events[state.position]
            state.position += 1
            state.playhead = event.time
            return event
        }
        if let next { output(.events([next])) }
        return next
    }

    public func jumpToStart() {
        state.withLock { state in
            state.position = 0
            state.playhead = 0
            state.skipped = 0
        }
        output(.reset)
    }

    /// Moves the playhead to session time `target` (within the recording): forward, what
    /// falls due comes out at once; back, the screen starts over and gets everything up to
    /// there, so it shows the queue as it was at that moment.
    public func seek(to target: TimeInterval) {
        let (reset, due) = state.withLock { state -> (Bool, ArraySlice<RequestEvent>) in
            let time = max(0, min(duration, target))
            let back = time < state.playhead
            if back { state.position = 0 }
            let start = state.position
            while state.position < events.count, events[state.position].time <= time { state.position += 1 }
            state.playhead = time
            return (back, events[start..<state.position])
        }
        if reset { output(.reset) }
        if !due.isEmpty { output(.events(Array(due))) }
    }

    public func jumpToEnd() {
        let rest = state.withLock { state -> ArraySlice<RequestEvent> in
            let rest = events[state.position...]
            state.position = events.count
            state.playhead = duration
            return rest
        }
        if !rest.isEmpty { output(.events(Array(rest))) }
    }
}

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
        case .retry: return CommandAnswer(ok: false, "a replay cannot retry: it shows what happened")
        case .cancel, .cancelAll: return CommandAnswer(ok: false, "a replay cannot cancel")
        case .releaseBatches: return CommandAnswer(ok: false, "nothing is held in a replay")
        case .isolateHost, .closeCircuit: return CommandAnswer(ok: false, "a replay cannot change a circuit breaker: it shows what happened")
        case .setSuspended(let suspended):
            player.setPaused(suspended)
            return CommandAnswer(suspended ? "replay paused" : "replay resumed")
        case .playback(let action): return CommandAnswer(playback(action))
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
    public func status() -> String {
        let where_ = player.isAtEnd ? "END" : (player.isPaused ? "PAUSED" : "PLAYING")
        let skipped = player.skipped
        return "REPLAY \(ReplayPlayer.format(player.speed)) \(where_) \(String(format: "%.1f", player.playhead))/\(String(format: "%.1f", player.duration))s"
            + (skipped > 0 ? " (\(Self.duration(skipped)) idle skipped)" : "")
    }

    /// "58m12s", "2h03m", "7.5s".
    static func duration(_ seconds: TimeInterval) -> String {
        if seconds < 60 { return String(format: "%.1fs", seconds) }
        let whole = Int(seconds.rounded())
        if whole < 3600 { return "\(whole / 60)m\(String(format: "%02d", whole % 60))s" }
        return "\(whole / 3600)h\(String(format: "%02d", (whole % 3600) / 60))m"
    }
}

extension ReplayPlayer {
    static func format(_ speed: Double) -> String {
        speed == speed.rounded() ? "\(Int(speed))×" : "\((speed * 100).rounded() / 100)×"
    }
}
