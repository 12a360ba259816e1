import Foundation
import RequestOperations
/// The monitor's update, in the bubbletea shape: `update(state, action) -> (state, effects)`.
/// It changes the monitor state and returns what it wants done (a command for the queue);
/// it performs no I/O and takes no command object, so tests drive it with values alone.
/// The screen runs the effects off its drawing thread and feeds their answers back as
/// ``MonitorAction/answered(_:_:)``.
public enum MonitorUpdate {
    /// What the update may read besides the state.
    public struct Context {
        /// The ids the table shows now, in order.
        public var visible: [String]
        /// Table rows on screen, for PgUp/PgDn.
        public var pageSize: Int
        public var model: QueueModel
        /// Whether anything can be commanded (false: a replay without a player, a test).
        public var canCommand: Bool
        /// Whether operations can be cancelled (false in a replay).
        public var canCancel: Bool
        /// Whether the program refuses every command from this monitor (attached read-only).
        public var readOnly: Bool

        /// What a read-only program's monitor says at a key that would command it.
        static let readOnlyWords = "read-only: the program takes no commands from this monitor"

        public init(visible: [String], pageSize: Int, model: QueueModel, canCommand: Bool, canCancel: Bool, readOnly: Bool = false) {
            self.readOnly = readOnly
            self.visible = visible
            self.pageSize = pageSize
            self.model = model
            self.canCommand = canCommand
            self.canCancel = canCancel
        }
    }

    /// Carries out `action` on `state` and returns the effects it asks for.
    public static func update(_ state: inout MonitorState, _ action: MonitorAction, _ context: Context) -> [MonitorEffect] {
        switch action {
        case .answered(let command, let answer):
            state.commandsAnswered += 1
            if state.commandsAnswered > state.flashAfterCommand {
                state.flash = answer.message
                // What it matches now, in the filter's terms (they are the same terms).
                if case .queue(.addBreakpoint(let match)) = command, answer.ok, let flash = state.flash {
                    state.flash = flash + " · " + Self.matchingNow(match, context.model)
                }
            }
            // A pause that did not happen (refused, or the program is gone) is undone.
            if case .queue(.setSuspended(let suspended)) = command, !answer.ok { state.paused = !suspended }
            return []
        case .pausedElsewhere(let paused):
            state.paused = paused
            return []
        case .copied(let answer):
            state.flash = answer.message
            return []
        case .send(let command):
            state.commandsAsked += 1
            return [.command(command)]
        default:
            state.flash = nil
            let effects = apply(&state, action, context)
            state.commandsAsked += effects.count
            if state.flash != nil { state.flashAfterCommand = state.commandsAsked }
            return effects
        }
    }

    /// What a key does.
    private static func apply(_ state: inout MonitorState, _ action: MonitorAction, _ context: Context) -> [MonitorEffect] {
        let visible = context.visible, pageSize = context.pageSize, model = context.model
        /// A command for the queue, or the words for its absence.
        func command(_ command: MonitorCommand, else absent: String) -> [MonitorEffect] {
            guard context.canCommand else {
                state.flash = absent
                return []
            }
            return [.command(command)]
        }
        let selected = state.selectedID.flatMap { visible.firstIndex(of: $0) }
        func select(_ index: Int) {
            guard !visible.isEmpty else { return }
            state.selectedID = visible[min(max(0, index), visible.count - 1)]
        }
        // The help, while it is shown, takes the moving keys: it scrolls where it does not fit.
        if state.showHelp, let step = scrollStep(action, pageSize: pageSize) {
            state.helpScroll = max(0, min(step(state.helpScroll), KeyMap.helpLines.count - 1))
            return []
        }
        if let effects = hosts(&state, action, context) { return effects }
        if let effects = breakpoints(&state, action, context) { return effects }
        if case .compare = state.screen, let step = scrollStep(action, pageSize: pageSize) {
            state.bodyScroll = max(0, step(state.bodyScroll))
            return []
        }
        if case .detail(_, .body) = state.screen, let step = scrollStep(action, pageSize: pageSize) {
            state.bodyScroll = max(0, step(state.bodyScroll))
            return []
        }
        switch action {
        case .isolateHost, .closeCircuit, .toggleFault, .clearFaults, .splitHostsByProgram:
            return [] // the Hosts screen's: hosts(_:_:_:)
        case .startBreakpoint, .sendAtBreakpoint, .startAnswer, .failAtBreakpoint, .promptInput, .toggleBreakpoints, .removeBreakpoint:
            return [] // breakpoints(_:_:_:)
        case .down:
            state.follow = false
            select((selected ?? -1) + 1)
        case .up:
            state.follow = false
            select((selected ?? visible.count) - 1)
        case .pageDown:
            state.follow = false
            select((selected ?? 0) + max(1, pageSize - 1))
        case .pageUp:
            state.follow = false
            select((selected ?? 0) - max(1, pageSize - 1))
        case .top:
            state.follow = false
            select(0)
        case .bottom:
            select(visible.count - 1)
        case .open:
            // A selection the filter hides is not what the person sees: open the first shown.
            if let id = selected != nil ? state.selectedID : visible.first, model.row(id) != nil {
                state.selectedID = id
                state.screen = .detail(id: id, tab: .events)
            }
        case .back:
            if state.showHelp {
                state.showHelp = false
            } else {
                state.screen = .table
            }
        case .toggleHosts:
            state.screen = state.screen == .hosts ? .table : .hosts
        case .nextTab, .previousTab:
            state.bodyScroll = 0
            state.find = nil
            if case .detail(let id, let tab) = state.screen {
                let tabs = MonitorState.DetailTab.allCases
                let index = tabs.firstIndex(of: tab)! + (action == .nextTab ? 1 : tabs.count - 1)
                state.screen = .detail(id: id, tab: tabs[index % tabs.count])
            }
        case .startFind, .findInput, .findNext, .findPrevious:
            find(&state, action, model: model)
        case .compare:
            // A selection the filter hides is not what the person sees: the first shown, as Enter.
            if state.screen == .table, let hidden = state.selectedID, !visible.contains(hidden) { state.selectedID = visible.first }
            guard let id = focusedID(state), model.row(id) != nil else { return [] }
            if let marked = state.compareMark, marked != id, model.row(marked) != nil {
                state.compareMark = nil
                state.bodyScroll = 0
                state.screen = .compare(left: marked, right: id)
            } else {
                state.compareMark = id
                state.flash = "marked \(id): = on another operation compares the two"
            }
        case .editRequest:
            guard let id = focusedID(state), let row = model.row(id)?.expanded() else { return [] }
            guard context.canCommand, context.canCancel, !context.readOnly else {
                state.flash = context.readOnly ? Context.readOnlyWords : "nothing can be sent from a replay (reqtop replay --send re-sends a recording)"
                return []
            }
            switch CopiedRequest.entry(row) {
            case .success(let entry):
                // Stopped at a breakpoint: the edit is what goes on, not a copy sent beside it.
                if case .breakpoint(_, _, afterResponse: false)? = row.heldBy { return [.edit(id: id, entry: entry, atBreakpoint: true)] }
                return [.edit(id: id, entry: entry, atBreakpoint: false)]
            case .failure(let why):
                state.flash = why.message
                return []
            }
        case .copyCurl:
            guard let id = focusedID(state), let row = model.row(id)?.expanded() else { return [] }
            return [CopiedRequest.effect(row)]
        case .retry:
            guard let id = focusedID(state) else { return [] }
            return command(.queue(.retry(operation: id)), else: "nothing to retry in a replay")
        case .cancel:
            guard let id = focusedID(state), let row = model.row(id) else { return [] }
            if row.state.isFinished {
                state.flash = "\(id) has already \(row.state == .succeeded ? "succeeded" : row.state.rawValue)"
            } else if context.readOnly {
                state.flash = Context.readOnlyWords
            } else if context.canCommand, context.canCancel {
                state.confirmation = .cancel(id: id)
            } else {
                state.flash = "nothing to cancel in a replay"
            }
        case .cancelAll:
            if context.readOnly {
                state.flash = Context.readOnlyWords
            } else if context.canCommand, context.canCancel {
                state.confirmation = .cancelAll
            } else {
                state.flash = "nothing to cancel in a replay"
            }
        case .playback(let action):
            return command(.playback(action), else: "only a replay has a speed, steps and jumps")
        case .confirm(let yes):
            let confirmation = state.confirmation
            state.confirmation = nil
            guard yes, let confirmation, context.canCommand else {
                state.flash = "not cancelled"
                return []
            }
            switch confirmation {
            case .cancel(let id): return [.command(.queue(.cancel(operation: id)))]
            case .cancelAll: return [.command(.queue(.cancelAll))]
            }
        case .releaseBatches:
            return command(.queue(.releaseBatches), else: "nothing is held in a replay")
        case .togglePause:
            state.paused.toggle()
            return command(.queue(.setSuspended(state.paused)), else: state.paused ? "paused" : "resumed")
        case .startFilter, .filterInput, .startTimeJump, .timeInput:
            return prompt(&state, action, canCommand: context.canCommand)
        case .toggleFollow:
            state.follow.toggle()
            if state.follow { select(visible.count - 1) }
        case .cycleSort:
            let sorts = MonitorState.Sort.allCases
            state.sort = sorts[(sorts.firstIndex(of: state.sort)! + 1) % sorts.count]
            state.flash = "sorted by \(state.sort.rawValue)"
        case .toggleHelp:
            state.showHelp.toggle()
            state.helpScroll = 0
        case .quit:
            state.quit = true
        case .answered, .pausedElsewhere, .copied, .send:
            break // answers, not keys: handled by update
        }
        return []
    }

    /// How many of the operations shown a breakpoint's match picks: "matches 3 of the 40
    /// requests so far".
    static func matchingNow(_ match: String, _ model: QueueModel) -> String {
        var text = match.trimmingCharacters(in: .whitespaces)
        if text.lowercased().hasPrefix("after ") { text = String(text.dropFirst(6)) }
        let filter = RowFilter(text)
        let count = model.rows.filter(filter.matches).count
        return "matches \(count) of the \(model.rows.count) request\(model.rows.count == 1 ? "" : "s") so far"
    }

    /// The operation a command applies to: the one in the detail view, else the selection.
    static func focusedID(_ state: MonitorState) -> String? {
        if case .detail(let id, _) = state.screen { return id }
        return state.selectedID
    }
}

extension MonitorUpdate {

}
