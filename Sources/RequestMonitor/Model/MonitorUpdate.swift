/// Carries out an action: changes the monitor state and, for commands, asks the queue.
/// Pure apart from the ``QueueCommands`` it is given, so tests drive it directly.
public enum MonitorUpdate {
    /// - Parameters:
    ///   - visible: the ids the table shows now, in order.
    ///   - pageSize: table rows on screen, for PgUp/PgDn.
    public static func apply(_ action: MonitorAction, to state: inout MonitorState, visible: [String], pageSize: Int,
                             model: QueueModel, commands: QueueCommands?) {
        state.flash = nil
        let selected = state.selectedID.flatMap { visible.firstIndex(of: $0) }
        func select(_ index: Int) {
            guard !visible.isEmpty else { return }
            state.selectedID = visible[min(max(0, index), visible.count - 1)]
        }
        switch action {
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
            if let id = state.selectedID, model.row(id) != nil {
                state.screen = .detail(id: id, tab: .events)
            }
        case .back:
            if state.showHelp {
                state.showHelp = false
            } else {
                state.screen = .table
            }
        case .nextTab, .previousTab:
            if case .detail(let id, let tab) = state.screen {
                let tabs = MonitorState.DetailTab.allCases
                let index = tabs.firstIndex(of: tab)! + (action == .nextTab ? 1 : tabs.count - 1)
                state.screen = .detail(id: id, tab: tabs[index % tabs.count])
            }
        case .retry:
            guard let id = focusedID(state) else { return }
            state.flash = commands?.retry(id) ?? "nothing to retry in a replay"
        case .cancel:
            guard let id = focusedID(state), let row = model.row(id) else { return }
            if row.state.isFinished {
                state.flash = "\(id) has already \(row.state == .succeeded ? "succeeded" : row.state.rawValue)"
            } else if let commands, commands.canCancel {
                state.confirmation = .cancel(id: id)
            } else {
                state.flash = "nothing to cancel in a replay"
            }
        case .cancelAll:
            if let commands, commands.canCancel {
                state.confirmation = .cancelAll
            } else {
                state.flash = "nothing to cancel in a replay"
            }
        case .playback(let action):
            state.flash = commands?.playback(action) ?? "only a replay has a speed, steps and jumps"
        case .confirm(let yes):
            defer { state.confirmation = nil }
            guard yes, let confirmation = state.confirmation, let commands else {
                state.flash = "not cancelled"
                return
            }
            switch confirmation {
            case .cancel(let id): state.flash = commands.cancel(id)
            case .cancelAll: state.flash = commands.cancelAll()
            }
        case .releaseBatches:
            state.flash = commands?.releaseBatches() ?? "nothing is held in a replay"
        case .togglePause:
            state.paused.toggle()
            state.flash = commands?.setSuspended(state.paused) ?? (state.paused ? "paused" : "resumed")
        case .startFilter:
            state.filterDraft = state.filter
        case .filterInput(let key):
            switch key {
            case .character("\u{15}"): state.filterDraft = "" // Ctrl-U clears, as in a shell
            case .character(let c): state.filterDraft = (state.filterDraft ?? "") + String(c)
            case .backspace: state.filterDraft = String((state.filterDraft ?? "").dropLast())
            case .enter:
                state.filter = state.filterDraft ?? ""
                state.filterDraft = nil
                state.scroll = 0
            case .escape: state.filterDraft = nil
            }
        case .toggleFollow:
            state.follow.toggle()
            if state.follow { select(visible.count - 1) }
        case .cycleSort:
            let sorts = MonitorState.Sort.allCases
            state.sort = sorts[(sorts.firstIndex(of: state.sort)! + 1) % sorts.count]
            state.flash = "sorted by \(state.sort.rawValue)"
        case .toggleHelp:
            state.showHelp.toggle()
        case .quit:
            state.quit = true
        }
    }

    /// The operation a command applies to: the one in the detail view, else the selection.
    static func focusedID(_ state: MonitorState) -> String? {
        if case .detail(let id, _) = state.screen { return id }
        return state.selectedID
    }
}
