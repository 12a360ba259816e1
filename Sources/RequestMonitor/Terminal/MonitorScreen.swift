import Foundation
import Dispatch
import ProcessSignals
import RequestOperations
import Synchronization

/// The screen manager: owns the terminal, the model and the monitor state, and runs the
/// input loop. Everything that comes in — events, resets, answers to commands, resizes, a
/// stop — goes through one ordered inbox (``ScreenInput``), and keys are read from stdin
/// by the loop itself; all of it is handled on the thread that calls ``run()``. The update
/// returns effects (commands for the queue), which run on a serial queue of their own, so
/// a command that waits for an answer (an attached program's) never freezes the screen.
///
/// The loop sleeps in `poll()` on stdin and on a self-pipe that ``feed(_:)`` and the
/// signal handlers write to: idle, it costs nothing; while anything is running or counting
/// down it draws about 12 frames a second.
public final class MonitorScreen: Sendable {
    public struct Options: Sendable {
        public var source: String
        public var color: Bool
        /// Session time now (for countdowns); `nil` uses the latest event's time.
        public var clock: (@Sendable () -> TimeInterval)?
        /// Called once, from the loop, when the person quits.
        public var onQuit: (@Sendable () -> Void)?
        /// A replay's status for the header ("REPLAY 2× PLAYING 3.1/20.0s").
        public var playbackStatus: (@Sendable () -> String)?

        public init(source: String, color: Bool, clock: (@Sendable () -> TimeInterval)? = nil, onQuit: (@Sendable () -> Void)? = nil,
                    playbackStatus: (@Sendable () -> String)? = nil) {
            self.source = source
            self.color = color
            self.clock = clock
            self.onQuit = onQuit
            self.playbackStatus = playbackStatus
        }
    }

    private let options: Options
    private let commands: QueueCommands?
    private let inbox = Mutex<[ScreenInput]>([])
    /// Set when ``run()`` has returned: nothing takes from the inbox any more.
    private let finished = Mutex(false)
    private let wake: WakePipe
    /// Where effects run: off the drawing thread, one at a time, in order.
    private let effects = DispatchQueue(label: "reqtop.monitor-commands")

    public init(options: Options, commands: QueueCommands?) throws {
        self.options = options
        self.commands = commands
        self.wake = try WakePipe()
    }

    private func send(_ input: ScreenInput) {
        inbox.withLock { $0.append(input) }
        wake.signal()
    }

    /// Hands events to the screen (from any thread).
    public func feed(_ events: [RequestEvent]) {
        send(.events(events))
    }

    /// Events handed over and not yet taken in, while the screen runs (0 once it has ended):
    /// a feeder faster than the screen (a replay's jump to the end of a large file) waits on
    /// it instead of piling events up in memory.
    public var backlog: Int {
        guard !finished.withLock({ $0 }) else { return 0 }
        return inbox.withLock { inbox in
            inbox.reduce(0) { count, input in
                if case .events(let events) = input { count + events.count } else { count }
            }
        }
    }

    /// Forgets every event shown (a replay jumping back to its start).
    public func reset() {
        send(.reset)
    }

    /// Shows the queue as paused or not when someone else changed it (another monitor of an
    /// attached program).
    public func showPaused(_ paused: Bool) {
        send(.action(.pausedElsewhere(paused)))
    }

    /// Says the source will add nothing more: from now on, whenever every operation shown
    /// has finished, the header shows `text` ("ENDED: …") and its clock and rate stand still
    /// at the last event. A re-run from the monitor makes it live until that one ends too.
    public func sourceComplete(_ text: String) {
        send(.complete(text))
    }

    /// Ends the loop from another thread (or a signal).
    public func stop() {
        send(.stop)
    }

    /// Runs the update's effects off the drawing thread; answers come back through the inbox.
    private func perform(_ effects: [MonitorEffect]) {
        guard let commands else { return }
        for case .command(let command) in effects {
            self.effects.async { [self] in
                send(.action(.answered(command, commands.perform(command))))
            }
        }
    }

    /// Runs until `q`, Ctrl-C or SIGTERM. The terminal is restored before it returns.
    public func run() {
        // Signals come through SignalCenter (installed at the start of main), so none is lost.
        var registrations = [SIGINT, SIGTERM, SIGHUP].map { SignalCenter.handle($0) { [self] in stop() } }
        let terminal = Terminal(wantColor: options.color)
        registrations.append(SignalCenter.handle(SIGWINCH) { [self] in send(.resize) })
        registrations.append(SignalCenter.handle(SIGTSTP) { [self] in send(.suspend) })
        defer { registrations.forEach { $0.cancel() } }
        defer { finished.withLock { $0 = true } }

        defer { terminal.end() }
        let theme = Theme(color: terminal.color, unicode: terminal.unicode)
        var model = QueueModel(source: options.source)
        var state = MonitorState()
        var cache = VisibleCache()
        var dirty = true
        var stopped = false
        /// What the header says once the source is complete and every operation finished.
        var endedText: String?

        while !stopped {
            var now = state.ended != nil ? model.latest : options.clock?() ?? model.latest
            var (width, height) = terminal.size
            func context() -> MonitorUpdate.Context {
                MonitorUpdate.Context(visible: cache.ids(model: model, state: state, now: now), pageSize: MonitorView.pageSize(height: height),
                                      model: model, canCommand: commands != nil, canCancel: commands?.canCancel ?? false)
            }
            for input in inbox.withLock({ inbox in defer { inbox = [] }; return inbox }) {
                dirty = true
                switch input {
                case .events(let events): model.apply(events)
                case .complete(let text): endedText = text
                case .reset:
                    model = QueueModel(source: options.source)
                    cache = VisibleCache()
                case .action(let action): perform(MonitorUpdate.update(&state, action, context()))
                case .resize: terminal.updateSize()
                case .suspend:
                    // Ctrl-Z, handled here so ncurses is never entered from two threads.
                    terminal.suspend()
                    SignalCenter.stopProcess()
                    terminal.resume()
                case .stop: stopped = true
                }
            }
            for key in terminal.readKeys() {
                dirty = true
                if key == .resize { continue }
                guard let action = KeyMap.action(for: key, in: state) else { continue }
                perform(MonitorUpdate.update(&state, action, context()))
            }
            if state.quit || stopped { break }
            // Read again: a resize handled above must be drawn at its size now. (Read only
            // before it, an idle screen — a session that had ended — drew the old size and
            // then waited a second with nothing to redraw: it stayed wrong until a key.)
            (width, height) = terminal.size
            let unfinished = [OperationRow.State.running, .backoff, .queued, .preparing, .held].reduce(0) { $0 + model.counts[$1, default: 0] }
            let ended = unfinished == 0 && !model.rows.isEmpty ? endedText : nil
            if ended != state.ended {
                state.ended = ended
                now = ended != nil ? model.latest : options.clock?() ?? model.latest
                dirty = true
            }

            let visibleIDs = cache.ids(model: model, state: state, now: now)
            let pageSize = MonitorView.pageSize(height: height)
            if state.follow, let last = visibleIDs.last { state.selectedID = last }
            if state.selectedID == nil || !visibleIDs.contains(state.selectedID!) { state.selectedID = visibleIDs.last }
            let selected = state.selectedID.flatMap { visibleIDs.firstIndex(of: $0) }
            state.scroll = MonitorView.scroll(current: state.scroll, selected: selected, count: visibleIDs.count, pageSize: pageSize)

            state.playback = options.playbackStatus?()
            let active = (options.playbackStatus != nil && state.ended == nil)
                || model.counts[.running, default: 0] + model.counts[.backoff, default: 0] + model.counts[.preparing, default: 0] + model.counts[.held, default: 0] > 0
            if dirty || active {
                let view = MonitorView(model: model, state: state, visible: cache.indices, theme: theme, now: now)
                terminal.draw(view.render(width: width, height: height))
                dirty = false
            }
            wake.wait(stdinToo: true, timeoutMilliseconds: active ? 80 : 1000)
        }
        options.onQuit?()
    }
}

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

/// The filtered, sorted rows, recomputed only when the model, filter or sort changed
/// (durations change every frame, so that sort is recomputed each time).
struct VisibleCache {
    private var key: (version: Int, filter: String, sort: MonitorState.Sort)?
    private(set) var indices: [Int] = []
    private var idList: [String] = []
    /// Keeps each row's text match, so a change looks at new and edited rows only.
    private var rows = VisibleRowsCache()

    mutating func ids(model: QueueModel, state: MonitorState, now: TimeInterval) -> [String] {
        if let key, key.version == model.version, key.filter == state.filter, key.sort == state.sort, state.sort != .duration {
            return idList
        }
        indices = rows.compute(model, filter: state.filter, sort: state.sort, now: now)
        idList = indices.map { model.rows[$0].id }
        key = (model.version, state.filter, state.sort)
        return idList
    }
}

/// A self-pipe: other threads write a byte to wake the loop out of `poll()`.
final class WakePipe: Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32

    init() throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
        readEnd = fds[0]
        writeEnd = fds[1]
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    func signal() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Sleeps until a wake, a key on stdin, a signal or the timeout; then empties the pipe.
    func wait(stdinToo: Bool, timeoutMilliseconds: Int32) {
        var fds = [pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)]
        if stdinToo { fds.append(pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)) }
        _ = poll(&fds, nfds_t(fds.count), timeoutMilliseconds)
        var buffer = [UInt8](repeating: 0, count: 256)
        while read(readEnd, &buffer, buffer.count) > 0 {}
    }
}
