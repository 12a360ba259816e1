import Dispatch
import Foundation
import RequestOperations
import Synchronization

/// Plays recorded events on their original timeline into a ``MonitorScreen``: the same
/// model and view as live, so the end of a replay looks as the live run did at its end.
///
/// Speed runs from 0.25× to 16×; it can pause, step to the next event, and jump to the
/// start or the end. A driver thread ticks every 20 ms and hands over what fell due.
///
/// The events come from a ``ReplaySource`` a window at a time, so a recording read while it
/// plays is never held whole: what was played is let go, and going back starts over from
/// the first event (the screen is reset and fed everything up to the new playhead).
public final class ReplayPlayer: Sendable {
    /// The steps `+` and `-` move between.
    public static let speeds: [Double] = [0.25, 0.5, 1, 2, 4, 8, 16]
    /// Any speed in this range may be asked for (`--speed 3`); `+` and `-` go to the next step.
    public static let speedRange: ClosedRange<Double> = 0.25...16
    /// How many events are taken from the source at a time.
    static let window = 4096

    private struct State {
        /// Events taken from the source and not yet handed over start at `position`.
        var window: [RequestEvent] = []
        var position = 0
        /// The source has no more events.
        var exhausted = false
        var playhead: TimeInterval = 0
        var speed = 1.0
        var paused = false
        var stopped = false
        var lastTick = DispatchTime.now().uptimeNanoseconds
        /// Session time jumped over because nothing happened in it.
        var skipped: TimeInterval = 0

        /// The next event not handed over; nil at the end, or when the source has none ready.
        mutating func next(from source: ReplaySource) -> RequestEvent? {
            if position < window.count { return window[position] }
            guard !exhausted else { return nil }
            guard let more = source.read(upTo: ReplayPlayer.window) else {
                exhausted = true
                window = []
                position = 0
                return nil
            }
            window = more
            position = 0
            return more.first
        }

        var atEnd: Bool { exhausted && position >= window.count }
    }

    /// A stretch longer than this with no event is skipped (to a second before the next
    /// event) and counted in ``skipped``: a browser HAR with an hour between two page loads
    /// took an hour at 1×.
    public static let idleGapLimit: TimeInterval = 5

    private let source: ReplaySource
    private let state: Mutex<State>
    /// Held while events are taken and handed over, so batches reach the screen in order
    /// whether the tick or a jump took them.
    private let delivering = Mutex(())
    private let output: @Sendable (ReplayOutput) -> Void

    /// What the player hands to the screen.
    public enum ReplayOutput: Sendable {
        case events([RequestEvent])
        /// Forget everything shown: the replay starts over.
        case reset
    }

    public init(source: ReplaySource, speed: Double = 1, output: @escaping @Sendable (ReplayOutput) -> Void) {
        self.source = source
        self.state = Mutex(State(speed: Self.speedRange.contains(speed) ? speed : 1))
        self.output = output
    }

    public convenience init(events: [RequestEvent], speed: Double = 1, output: @escaping @Sendable (ReplayOutput) -> Void) {
        self.init(source: ReplayEvents(events), speed: speed, output: output)
    }

    /// Session time the replay has reached: the screen's clock.
    public var playhead: TimeInterval { state.withLock { $0.playhead } }
    public var speed: Double { state.withLock { $0.speed } }
    public var isPaused: Bool { state.withLock { $0.paused } }
    public var isAtEnd: Bool { state.withLock { $0.atEnd } }
    /// The latest event time read so far (it grows while a recording is still being read).
    public var duration: TimeInterval { source.extent.duration }
    /// Whether ``duration`` is the recording's end, not just as far as it was read.
    public var isDurationKnown: Bool { source.extent.complete }
    /// Why the recording could not be read to its end, if it could not.
    public var problem: String? { source.problem }
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
        delivering.withLock { _ in
            let due = state.withLock { state -> [RequestEvent] in
                let elapsed = Double(now &- state.lastTick) / 1e9
                state.lastTick = now
                guard !state.paused, !state.atEnd else { return [] }
                state.playhead += elapsed * state.speed
                var due: [RequestEvent] = []
                while let next = state.next(from: source), next.time <= state.playhead {
                    due.append(next)
                    state.position += 1
                }
                if let next = state.next(from: source), next.time - state.playhead > Self.idleGapLimit {
                    let jump = next.time - 1 - state.playhead
                    state.playhead += jump
                    state.skipped += jump
                }
                // At the end the playhead stands at the last event, never past it ("END 1.3/1.1s").
                if state.atEnd { state.playhead = min(state.playhead, duration) }
                return due
            }
            if !due.isEmpty { output(.events(due)) }
        }
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

    /// Pauses and hands over exactly the next event (waiting for the reader if need be).
    public func step() -> RequestEvent? {
        delivering.withLock { _ in
            state.withLock { $0.paused = true }
            while true {
                let (next, ready) = state.withLock { state -> (RequestEvent?, Bool) in
                    guard let event = state.next(from: source) else { return (nil, state.atEnd) }
                    state.position += 1
                    state.playhead = max(state.playhead, event.time)
                    return (event, true)
                }
                if let next { output(.events([next])) }
                if ready { return next }
                Thread.sleep(forTimeInterval: 0.002)
            }
        }
    }

    public func jumpToStart() {
        delivering.withLock { _ in
            state.withLock { state in
                source.rewind()
                state = State(speed: state.speed, paused: state.paused, stopped: state.stopped)
            }
            output(.reset)
        }
    }

    /// Moves the playhead to session time `target` (within the recording): forward, what
    /// falls due comes out at once; back, the screen starts over and gets everything up to
    /// there, so it shows the queue as it was at that moment.
    public func seek(to target: TimeInterval) {
        delivering.withLock { _ in
            let back = state.withLock { state -> Bool in
                let time = max(0, target)
                guard time < state.playhead else { return false }
                source.rewind()
                state = State(speed: state.speed, paused: state.paused, stopped: state.stopped)
                return true
            }
            if back { output(.reset) }
            feed(until: max(0, target))
        }
    }

    public func jumpToEnd() {
        delivering.withLock { _ in feed(until: .infinity) }
    }

    /// Hands over every event up to `time`, in windows, waiting for the reader where it has
    /// not got that far; the playhead ends at `time` or the last event.
    private func feed(until time: TimeInterval) {
        /// After a window: where feeding stands.
        enum Progress { case reached, moreReady, waitingForReader }
        while true {
            let (batch, progress) = state.withLock { state -> ([RequestEvent], Progress) in
                var batch: [RequestEvent] = []
                while batch.count < Self.window, let next = state.next(from: source), next.time <= time {
                    batch.append(next)
                    state.position += 1
                }
                if state.atEnd {
                    // At the end the playhead stands at the last event, never past it (it may
                    // have run ahead while the reader had not got there).
                    state.playhead = min(max(state.playhead, time), source.extent.duration)
                    return (batch, .reached)
                }
                if let next = state.next(from: source), next.time > time {
                    state.playhead = max(state.playhead, time)
                    return (batch, .reached)
                }
                return (batch, batch.isEmpty ? .waitingForReader : .moreReady)
            }
            if !batch.isEmpty { output(.events(batch)) }
            switch progress {
            case .reached: return
            case .moreReady: continue
            case .waitingForReader: Thread.sleep(forTimeInterval: 0.002)
            }
        }
    }
}

extension ReplayPlayer {
    static func format(_ speed: Double) -> String {
        speed == speed.rounded() ? "\(Int(speed))×" : "\((speed * 100).rounded() / 100)×"
    }
}
