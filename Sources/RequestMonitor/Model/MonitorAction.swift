/// Everything a key can do. The ``KeyMap`` turns keys into these; ``MonitorUpdate``
/// carries them out.
public enum MonitorAction: Sendable, Equatable {
    case up, down, pageUp, pageDown, top, bottom
    case open, back, nextTab, previousTab
    case retry, cancel, cancelAll, togglePause, releaseBatches
    case startFilter, toggleFollow, cycleSort, toggleHelp, quit
    case confirm(Bool)
    case playback(PlaybackAction)
    /// A key typed into the filter: a character, backspace, enter or escape.
    case filterInput(FilterKey)

    public enum FilterKey: Sendable, Equatable {
        case character(Character), backspace, enter, escape
    }
}

/// Key → action, in one table (as htop's Action.c), with the text the help overlay shows.
public enum KeyMap {
    /// Keys as the terminal layer reports them.
    public enum Key: Sendable, Hashable {
        case character(Character)
        case up, down, pageUp, pageDown, home, end, enter, escape, tab, backTab, backspace, f1, resize
    }

    public struct Binding: Sendable {
        public var keys: [Key]
        public var label: String
        public var action: MonitorAction
        public var help: String
    }

    public static let bindings: [Binding] = [
        Binding(keys: [.character("j"), .down], label: "j ↓", action: .down, help: "select the next operation"),
        Binding(keys: [.character("k"), .up], label: "k ↑", action: .up, help: "select the previous operation"),
        Binding(keys: [.pageDown], label: "PgDn", action: .pageDown, help: "a page down"),
        Binding(keys: [.pageUp], label: "PgUp", action: .pageUp, help: "a page up"),
        Binding(keys: [.character("g"), .home], label: "g", action: .top, help: "the first operation"),
        Binding(keys: [.character("G"), .end], label: "G", action: .bottom, help: "the last operation"),
        Binding(keys: [.enter], label: "Enter", action: .open, help: "open the operation's detail view"),
        Binding(keys: [.tab], label: "Tab", action: .nextTab, help: "next tab of the detail view"),
        Binding(keys: [.backTab], label: "S-Tab", action: .previousTab, help: "previous tab"),
        Binding(keys: [.escape], label: "Esc", action: .back, help: "back to the table; close help"),
        Binding(keys: [.character("r")], label: "r", action: .retry, help: "retry now: skip the backoff, or run a finished operation again"),
        Binding(keys: [.character("X")], label: "X", action: .cancel, help: "cancel the selected operation (asks first)"),
        Binding(keys: [.character("C")], label: "C", action: .cancelAll, help: "cancel every operation (asks first)"),
        Binding(keys: [.character("p"), .character(" ")], label: "p Space", action: .togglePause, help: "pause or resume the queue"),
        Binding(keys: [.character("b")], label: "b", action: .releaseBatches, help: "release every held batch now"),
        Binding(keys: [.character("/")], label: "/", action: .startFilter, help: "filter: text, or state:failed status:5xx method:POST"),
        Binding(keys: [.character("o")], label: "o", action: .cycleSort, help: "change the sort: arrival, state, duration, host"),
        Binding(keys: [.character("F")], label: "F", action: .toggleFollow, help: "follow the newest operation"),
        Binding(keys: [.character("+"), .character("=")], label: "+ -", action: .playback(.faster), help: "replay: faster / slower (0.25× to 16×)"),
        Binding(keys: [.character("-")], label: "", action: .playback(.slower), help: ""),
        Binding(keys: [.character("n")], label: "n", action: .playback(.step), help: "replay: pause and step to the next event"),
        Binding(keys: [.character("<")], label: "< >", action: .playback(.start), help: "replay: jump to the start / the end"),
        Binding(keys: [.character(">")], label: "", action: .playback(.end), help: ""),
        Binding(keys: [.character("?"), .f1], label: "? F1", action: .toggleHelp, help: "this help"),
        Binding(keys: [.character("q")], label: "q", action: .quit, help: "quit"),
    ]

    private static let table: [Key: MonitorAction] = {
        var table: [Key: MonitorAction] = [:]
        for binding in bindings {
            for key in binding.keys { table[key] = binding.action }
        }
        return table
    }()

    /// The action for `key` in the current state: typing goes to the filter while it is
    /// open, and only y/n/Esc answer a confirmation.
    public static func action(for key: Key, in state: MonitorState) -> MonitorAction? {
        if state.filterDraft != nil {
            switch key {
            case .character(let c): return .filterInput(.character(c))
            case .backspace: return .filterInput(.backspace)
            case .enter: return .filterInput(.enter)
            case .escape: return .filterInput(.escape)
            default: return nil
            }
        }
        if state.confirmation != nil {
            switch key {
            case .character("y"), .character("Y"): return .confirm(true)
            case .character("n"), .character("N"), .escape: return .confirm(false)
            default: return nil
            }
        }
        return table[key]
    }
}
