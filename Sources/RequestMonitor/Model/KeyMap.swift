/// Key → action, in one table (as htop's Action.c). The same table gives the help overlay,
/// the function bar at the bottom of the screen and the key table in docs/monitor.md (a test
/// checks that the page shows ``markdownTable``), so a key is described in one place.
public enum KeyMap {
    /// Keys as the terminal layer reports them.
    public enum Key: Sendable, Hashable {
        case character(Character)
        case up, down, pageUp, pageDown, home, end, enter, escape, tab, backTab, backspace, f1, resize
    }

    /// Where a binding shows in the function bar.
    public struct BarEntry: Sendable {
        public enum Screens: Sendable { case table, detail, both, hosts }
        /// The key as the bar shows it ("Enter").
        public var key: String
        public var label: String
        /// The label while the queue is paused ("Resume" for "Pause").
        public var labelWhilePaused: String?
        public var screens: Screens
        /// Shown only while a request is held (the release key).
        public var onlyWhileHeld = false
        /// Shown only on the detail of an operation stopped at a breakpoint.
        public var onlyWhileStopped = false
        /// Shown on the Hosts screen too (which shows its own entries and these: keys that act
        /// on an operation, such as r and X, are not offered where no operation is shown).
        public var alsoOnHosts = false
        /// Shown only in a merged view of several programs (`attach --all`).
        public var onlyWhenMerged = false
    }

    public struct Binding: Sendable {
        public var keys: [Key]
        /// The keys as the help and docs/monitor.md show them.
        public var label: String
        public var action: MonitorAction
        public var help: String
        public var bar: BarEntry?
    }

    private static func bar(_ key: String, _ label: String, _ screens: BarEntry.Screens = .both, paused: String? = nil,
                            onlyWhileHeld: Bool = false, onlyWhileStopped: Bool = false, alsoOnHosts: Bool = false,
                            onlyWhenMerged: Bool = false) -> BarEntry {
        BarEntry(key: key, label: label, labelWhilePaused: paused, screens: screens, onlyWhileHeld: onlyWhileHeld,
                 onlyWhileStopped: onlyWhileStopped, alsoOnHosts: alsoOnHosts, onlyWhenMerged: onlyWhenMerged)
    }

    public static let bindings: [Binding] = [
        Binding(keys: [.character("j"), .down], label: "j ↓", action: .down, help: "select the next operation"),
        Binding(keys: [.character("k"), .up], label: "k ↑", action: .up, help: "select the previous operation"),
        Binding(keys: [.pageDown], label: "PgDn PgUp", action: .pageDown, help: "a page down / up"),
        Binding(keys: [.pageUp], label: "", action: .pageUp, help: ""),
        Binding(keys: [.character("g"), .home], label: "g G", action: .top, help: "the first / the last operation"),
        Binding(keys: [.character("G"), .end], label: "", action: .bottom, help: ""),
        Binding(keys: [.enter], label: "Enter", action: .open, help: "open the operation's detail view", bar: bar("Enter", "Detail", .table)),
        Binding(keys: [.tab], label: "Tab", action: .nextTab, help: "next tab of the detail view", bar: bar("Tab", "NextTab", .detail)),
        Binding(keys: [.backTab], label: "S-Tab", action: .previousTab, help: "previous tab"),
        Binding(keys: [.character("H")], label: "H", action: .toggleHosts,
                help: "hosts: in flight, waiting, circuit breaker, retries, refused retries, failures, p50/p95 per host",
                bar: bar("H", "Hosts", .table, alsoOnHosts: true)),
        Binding(keys: [.character("i")], label: "i c", action: .isolateHost,
                help: "hosts: isolate the selected host (its breaker stays open) / close its breaker (what it held goes out)",
                bar: bar("i", "Isolate", .hosts)),
        Binding(keys: [.character("c")], label: "", action: .closeCircuit, help: "", bar: bar("c", "Close", .hosts)),
        Binding(keys: [.character("!")], label: "!", action: .toggleFault,
                help: "hosts: inject a 503 into every request to the selected host, or stop (FAULTS ON in the header)", bar: bar("!", "Fault", .hosts)),
        Binding(keys: [.character("P")], label: "P", action: .splitHostsByProgram,
                help: "hosts: one line per host and program, or per host (a merged view, attach --all)",
                bar: bar("P", "ByProgram", .hosts, onlyWhenMerged: true)),
        Binding(keys: [.character("Z")], label: "Z", action: .clearFaults, help: "remove every injected fault"),
        Binding(keys: [.escape], label: "Esc", action: .back, help: "back to the table; close help", bar: bar("Esc", "Back", .detail, alsoOnHosts: true)),
        Binding(keys: [.character("r")], label: "r", action: .retry, help: "retry now: skip the backoff, or run a finished operation again",
                bar: bar("r", "Retry")),
        Binding(keys: [.character("X")], label: "X", action: .cancel, help: "cancel the selected operation (asks first)", bar: bar("X", "Cancel")),
        Binding(keys: [.character("C")], label: "C", action: .cancelAll, help: "cancel every operation (asks first)",
                bar: bar("C", "CancelAll", .table)),
        Binding(keys: [.character("p"), .character(" ")], label: "p Space", action: .togglePause, help: "pause or resume the queue",
                bar: bar("p", "Pause", paused: "Resume", alsoOnHosts: true)),
        Binding(keys: [.character("y")], label: "y", action: .copyCurl,
                help: "copy the request as curl (clipboard by OSC 52, and a file)",
                bar: bar("y", "Curl", .detail)),
        Binding(keys: [.character("e")], label: "e", action: .editRequest,
                help: "edit the request in $VISUAL/$EDITOR and send it again as ID~edit1", bar: bar("e", "Edit", .detail)),
        // Keys of their own in the Body tab only (see action(for:in:)): listed for the help.
        Binding(keys: [], label: "/ n N", action: .startFind, help: "in the Body tab: find in the bodies, then the next / previous match"),
        Binding(keys: [.character("B")], label: "B", action: .startBreakpoint,
                help: "breakpoint: stop matching requests (host: path: method: header:) before sending", bar: bar("B", "Break", .table)),
        Binding(keys: [.character("L")], label: "L d", action: .toggleBreakpoints,
                help: "the Breakpoints screen: each one's stage, on or off (Enter), what it holds; d removes one"),
        Binding(keys: [.character("d")], label: "", action: .removeBreakpoint, help: ""),
        Binding(keys: [.character("s")], label: "s a f", action: .sendAtBreakpoint,
                help: "at a breakpoint: send it / answer it yourself / fail it (-1005) without sending",
                bar: bar("s", "Send", .detail, onlyWhileStopped: true)),
        Binding(keys: [.character("a")], label: "", action: .startAnswer, help: "", bar: bar("a", "Answer", .detail, onlyWhileStopped: true)),
        Binding(keys: [.character("f")], label: "", action: .failAtBreakpoint, help: "", bar: bar("f", "Fail", .detail, onlyWhileStopped: true)),
        Binding(keys: [.character("=")], label: "=", action: .compare,
                help: "compare: mark this operation, then = on another shows both side by side", bar: bar("=", "Compare", .detail)),
        Binding(keys: [.character("b")], label: "b", action: .releaseBatches, help: "release every held batch now",
                bar: bar("b", "Release", .table, onlyWhileHeld: true)),
        Binding(keys: [.character("/")], label: "/", action: .startFilter, help: "filter: text, state:failed status:5xx method: host: path: header:name=value body: program:, !word",
                bar: bar("/", "Filter", .table)),
        Binding(keys: [.character("o")], label: "o", action: .cycleSort, help: "change the sort: arrival, state, duration, host",
                bar: bar("o", "Sort", .table)),
        Binding(keys: [.character("F")], label: "F", action: .toggleFollow, help: "follow the newest operation", bar: bar("F", "Follow", .table)),
        Binding(keys: [.character("+")], label: "+ -", action: .playback(.faster), help: "replay: faster / slower (0.25× to 16×)"),
        Binding(keys: [.character("-")], label: "", action: .playback(.slower), help: ""),
        Binding(keys: [.character("n")], label: "n", action: .playback(.step), help: "replay: pause and step to the next event"),
        Binding(keys: [.character("<")], label: "< >", action: .playback(.start), help: "replay: jump to the start / the end"),
        Binding(keys: [.character(">")], label: "", action: .playback(.end), help: ""),
        Binding(keys: [.character("[")], label: "[ ]", action: .playback(.seek(-10)), help: "replay: 10 s back / forward"),
        Binding(keys: [.character("]")], label: "", action: .playback(.seek(10)), help: ""),
        Binding(keys: [.character("{")], label: "{ }", action: .playback(.seek(-60)), help: "replay: a minute back / forward"),
        Binding(keys: [.character("}")], label: "", action: .playback(.seek(60)), help: ""),
        Binding(keys: [.character(":")], label: ":", action: .startTimeJump, help: "replay: go to a time (90, 1:30, 1m30s)"),
        Binding(keys: [.character("?"), .f1], label: "? F1", action: .toggleHelp, help: "this help", bar: bar("?", "Help", alsoOnHosts: true)),
        Binding(keys: [.character("q")], label: "q", action: .quit, help: "quit", bar: bar("q", "Quit", alsoOnHosts: true)),
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
        if state.commandPrompt != nil {
            switch key {
            case .character(let c): return .promptInput(.character(c))
            case .backspace: return .promptInput(.backspace)
            case .enter: return .promptInput(.enter)
            case .escape: return .promptInput(.escape)
            default: return nil
            }
        }
        if state.filterDraft != nil || state.timeDraft != nil {
            let typed: MonitorAction.FilterKey
            switch key {
            case .character(let c): typed = .character(c)
            case .backspace: typed = .backspace
            case .enter: typed = .enter
            case .escape: typed = .escape
            default: return nil
            }
            return state.filterDraft != nil ? .filterInput(typed) : .timeInput(typed)
        }
        if state.findDraft != nil {
            switch key {
            case .character(let c): return .findInput(.character(c))
            case .backspace: return .findInput(.backspace)
            case .enter: return .findInput(.enter)
            case .escape: return .findInput(.escape)
            default: return nil
            }
        }
        if case .detail(_, .body) = state.screen {
            switch key {
            case .character("/"): return .startFind
            case .character("n") where state.find != nil: return .findNext
            case .character("N") where state.find != nil: return .findPrevious
            default: break
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

    /// The function bar's key and label pairs for the screen showing.
    /// The Breakpoints screen's (`L`) own keys, for its bar: on it, Enter and `d` act on the
    /// selected breakpoint, not on an operation.
    public static let breakpointsBar: [(key: String, label: String)] = [
        ("↑↓", "Select"), ("Enter", "On/Off"), ("d", "Remove"), ("B", "Break"), ("L", "Back"), ("?", "Help"), ("q", "Quit"),
    ]

    /// - Parameter merged: a merged view of several programs (`attach --all`): its own keys show.
    public static func barHints(detail: Bool, paused: Bool, held: Bool, hosts: Bool = false, stopped: Bool = false,
                                breakpoints: Bool = false, merged: Bool = false) -> [(key: String, label: String)] {
        if breakpoints { return breakpointsBar }
        return bindings.compactMap(\.bar).filter { entry in
            let onScreen = switch entry.screens {
            case .both: !hosts || entry.alsoOnHosts
            case .table: !detail && !hosts || hosts && entry.alsoOnHosts
            case .detail: detail || hosts && entry.alsoOnHosts
            case .hosts: hosts
            }
            return onScreen && (held || !entry.onlyWhileHeld) && (stopped || !entry.onlyWhileStopped) && (merged || !entry.onlyWhenMerged)
        }.map { entry in (entry.key, paused ? entry.labelWhilePaused ?? entry.label : entry.label) }
    }

    /// The help overlay's lines: each documented binding's keys and what it does.
    public static var helpLines: [(keys: String, help: String)] {
        bindings.filter { !$0.help.isEmpty }.map { ($0.label, $0.help) }
    }

    /// The key table of docs/monitor.md, made from the same bindings.
    public static var markdownTable: String {
        var lines = ["| key | does |", "| --- | --- |"]
        for (keys, help) in helpLines {
            let shown = keys.split(separator: " ").map { "`\($0)`" }.joined(separator: " ")
            lines.append("| \(shown) | \(help) |")
        }
        return lines.joined(separator: "\n")
    }
}
