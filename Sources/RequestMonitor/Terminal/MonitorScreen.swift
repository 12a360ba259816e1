import Dispatch
import Foundation
import ProcessSignals
import RequestArchive
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
        public var playbackStatus: (@Sendable () -> PlaybackStatus)?
        /// Whether faults are injected into the queue shown (the header says FAULTS ON).
        public var faultsActive: (@Sendable () -> Bool)?
        /// Where each turn's work (inputs, the update, drawing) is timed, for benchmarks.
        public var frameTimes: FrameTimes?
        /// The programs of a merged view, read before each frame (the Hosts screen shows them).
        public var programs: (@Sendable () -> [ProgramLine])?

        public init(source: String, color: Bool, clock: (@Sendable () -> TimeInterval)? = nil, onQuit: (@Sendable () -> Void)? = nil,
                    playbackStatus: (@Sendable () -> PlaybackStatus)? = nil, faultsActive: (@Sendable () -> Bool)? = nil) {
            self.source = source
            self.faultsActive = faultsActive
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

    /// Writes a copy to its file and the clipboard; the answer says where it went.
    private static func copy(_ text: String, name: String, body: Data?, terminal: Terminal) -> CommandAnswer {
        terminal.copyToClipboard(text)
        do {
            let path = try CopiedRequest.write(text, name: name, body: body)
            return CommandAnswer("copied \(name) as curl (clipboard, OSC 52) and wrote \(path)")
        } catch {
            return CommandAnswer(ok: false, "copied \(name) as curl to the clipboard; could not write it to a file: \(error)")
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
        var program = MonitorProgram(source: options.source, canCommand: commands != nil, canCancel: commands?.canCancel ?? false,
                                     readOnly: commands?.readOnly ?? false)
        var dirty = true
        var stopped = false
        // Frames drawn for events are at least this far apart, so a busy stream is drawn in
        // batches (at 8,000 events a second a frame for every wake-up was 150 frames a
        // second and a third of a core); a key is drawn at once.
        let frameInterval: UInt64 = 33_000_000
        var lastDraw: UInt64 = 0
        var keyPressed = false

        while !stopped {
            // Everything that changes what is shown goes through the program's one update;
            // the terminal's own business (its size, Ctrl-Z, the end) is handled here.
            func update(_ input: MonitorProgram.Input) {
                let effects = program.update(input, clock: options.clock?(), pageSize: MonitorView.pageSize(height: terminal.size.height))
                perform(effects)
                // A copy touches the terminal (OSC 52): done here, on the drawing thread.
                for case .copy(let text, let name, let body) in effects {
                    let answer = Self.copy(text, name: name, body: body, terminal: terminal)
                    update(.action(.copied(answer)))
                }
                // The editor takes the terminal: here too, then the edit goes to the queue.
                for case .edit(let id, let entry, let atBreakpoint) in effects {
                    switch RequestEditor.edit(entry, terminal: terminal) {
                    case .edited(let edited):
                        let command: QueueCommand = atBreakpoint ? .resolveBreakpoint(operation: id, resolution: .edit(edited.edited))
                            : .resend(operation: id, edited: edited.edited)
                        update(.action(.send(.queue(command))))
                    case .unchanged(let why), .failed(let why): update(.action(.copied(CommandAnswer(ok: false, why))))
                    }
                }
            }
            // Timed only for the fleet benchmark (two clock reads a turn otherwise spent for nothing).
            let timing = options.frameTimes != nil
            let turnStart = timing ? DispatchTime.now().uptimeNanoseconds : 0, turnCPUStart = timing ? FrameTimes.threadCPU() : 0
            var drew = false
            var drawing: UInt64 = 0
            for input in inbox.withLock({ inbox in defer { inbox = [] }; return inbox }) {
                dirty = true
                switch input {
                case .events(let events): update(.events(events))
                case .complete(let text): update(.sourceComplete(text))
                case .reset: update(.reset)
                case .action(let action): update(.action(action))
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
                keyPressed = true
                if key == .resize { continue }
                guard let action = KeyMap.action(for: key, in: program.state) else { continue }
                update(.action(action))
            }
            if program.state.quit || stopped { break }
            // Read after the inputs: a resize handled above must be drawn at its size now.
            // (Read only before them, an idle screen — a session that had ended — drew the
            // old size and then waited a second with nothing to redraw.)
            let (width, height) = terminal.size
            let ended = program.state.ended
            update(.frame(clock: options.clock?(), pageSize: MonitorView.pageSize(height: height), playback: options.playbackStatus?(),
                          faultsOn: options.faultsActive?() ?? false, programs: options.programs?() ?? []))
            if program.state.ended != ended { dirty = true }
            let active = program.isActive(playing: options.playbackStatus != nil)
            let sinceDraw = DispatchTime.now().uptimeNanoseconds - lastDraw
            if dirty, !keyPressed, sinceDraw < frameInterval {
                // Too soon after the last frame: what comes meanwhile waits for the next one.
                wake.wait(stdinToo: true, wakeToo: false, timeoutMilliseconds: Int32((frameInterval - sinceDraw) / 1_000_000) + 1)
                continue
            }
            if dirty || active {
                let view = MonitorView(model: program.model, state: program.state, visible: program.visibleIndices, theme: theme,
                                       now: program.now(clock: options.clock?()))
                let rendered = view.render(width: width, height: height)
                let drawStart = timing ? DispatchTime.now().uptimeNanoseconds : 0
                terminal.draw(rendered)
                if timing { drawing = DispatchTime.now().uptimeNanoseconds - drawStart }
                dirty = false
                drew = true
                keyPressed = false
                lastDraw = DispatchTime.now().uptimeNanoseconds
            }
            if drew, timing {
                options.frameTimes?.add(turn: DispatchTime.now().uptimeNanoseconds - turnStart, drawing: drawing, cpu: FrameTimes.threadCPU() - turnCPUStart)
            }
            wake.wait(stdinToo: true, timeoutMilliseconds: active ? 80 : 1000)
        }
        options.onQuit?()
    }
}
