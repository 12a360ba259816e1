import Foundation
import RequestOperations

/// The whole of what the monitor shows and what the person chose, and the one update every
/// input goes through, in bubbletea's shape: `update(input) -> effects`. Events, a reset, the
/// source's end, keys, answers and each frame's tick all come here; the screen only reads
/// the terminal, runs the effects and draws. Tests drive it with values alone.
public struct MonitorProgram: Sendable {
    /// What reaches the program.
    public enum Input: Sendable {
        /// Events from the queue, a recording or an attached program.
        case events([RequestEvent])
        /// Forget every event shown (a replay jumping back to its start).
        case reset
        /// The source adds nothing more; `text` is what the header says once every
        /// operation shown has finished ("ENDED: …").
        case sourceComplete(String)
        /// A key's action, an answer to a command, a pause made elsewhere.
        case action(MonitorAction)
        /// Before each frame is drawn: the session clock's reading (nil: the latest event's
        /// time), the table's page size and a replay's status for the header.
        /// `programs`: the programs of a merged view (none otherwise).
        case frame(clock: TimeInterval?, pageSize: Int, playback: PlaybackStatus?, faultsOn: Bool = false, programs: [ProgramLine] = [])
    }

    public private(set) var model: QueueModel
    public private(set) var state = MonitorState()
    private var cache = VisibleCache()
    private var endedText: String?
    private let source: String
    private let canCommand: Bool
    private let canCancel: Bool
    private let readOnly: Bool

    public init(source: String, canCommand: Bool, canCancel: Bool, readOnly: Bool = false) {
        self.source = source
        self.readOnly = readOnly
        self.canCommand = canCommand
        self.canCancel = canCancel
        model = QueueModel(source: source)
    }

    /// Session time as the screen shows it: stood still at the last event once ended.
    public func now(clock: TimeInterval?) -> TimeInterval {
        state.ended != nil ? model.latest : clock ?? model.latest
    }

    /// The rows the table shows now, by index into the model, in order.
    public var visibleIndices: [Int] { cache.indices }

    /// Whether something moves on screen without input (running, counting down, a replay
    /// playing): the screen then draws about 12 frames a second.
    public func isActive(playing: Bool) -> Bool {
        (playing && state.ended == nil)
            || [OperationRow.State.running, .backoff, .preparing, .held].reduce(0) { $0 + model.counts[$1, default: 0] } > 0
    }

    /// Carries out `input` and returns what it asks the screen to do.
    public mutating func update(_ input: Input, clock: TimeInterval? = nil, pageSize: Int = 20) -> [MonitorEffect] {
        switch input {
        case .events(let events):
            model.apply(events)
        case .reset:
            model = QueueModel(source: source)
            cache = VisibleCache()
        case .sourceComplete(let text):
            endedText = text
        case .action(let action):
            let now = now(clock: clock)
            let context = MonitorUpdate.Context(visible: cache.ids(model: model, state: state, now: now), pageSize: pageSize,
                                                model: model, canCommand: canCommand, canCancel: canCancel, readOnly: readOnly)
            return MonitorUpdate.update(&state, action, context)
        case .frame(let clock, let pageSize, let playback, let faultsOn, let programs):
            frame(clock: clock, pageSize: pageSize, playback: playback)
            state.faultsOn = faultsOn
            state.programs = programs
        }
        return []
    }

    /// Settles what follows from everything that came in since the last frame: whether the
    /// session has ended, the selection (following the newest, or kept on a row the filter
    /// still shows), and the scroll that keeps it in view.
    private mutating func frame(clock: TimeInterval?, pageSize: Int, playback: PlaybackStatus?) {
        let unfinished = [OperationRow.State.running, .backoff, .queued, .preparing, .held].reduce(0) { $0 + model.counts[$1, default: 0] }
        state.ended = unfinished == 0 && !model.rows.isEmpty ? endedText : nil
        let visibleIDs = cache.ids(model: model, state: state, now: now(clock: clock))
        if state.follow, let last = visibleIDs.last { state.selectedID = last }
        if state.selectedID == nil || !visibleIDs.contains(state.selectedID!) { state.selectedID = visibleIDs.last }
        let selected = state.selectedID.flatMap { visibleIDs.firstIndex(of: $0) }
        state.scroll = MonitorView.scroll(current: state.scroll, selected: selected, count: visibleIDs.count, pageSize: pageSize)
        state.playback = playback
    }
}
