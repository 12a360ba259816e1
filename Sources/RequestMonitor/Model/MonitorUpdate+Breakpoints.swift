import Foundation
import RequestOperations

/// The update's breakpoint keys: `B` sets one from a match (prefilled with the filter), and
/// on an operation stopped at one `s` sends it, `a` answers it, `f` fails it (`e` edits it
/// and `X` cancels it, as anywhere).
extension MonitorUpdate {
    /// What `action` does if it is a breakpoint key; nil otherwise.
    static func breakpoints(_ state: inout MonitorState, _ action: MonitorAction, _ context: Context) -> [MonitorEffect]? {
        if state.screen == .breakpoints, let effects = listScreen(&state, action, context) { return effects }
        switch action {
        case .toggleBreakpoints:
            state.screen = state.screen == .breakpoints ? .table : .breakpoints
            return []
        case .removeBreakpoint:
            state.flash = "d removes a breakpoint on the Breakpoints screen (L)"
            return []
        case .startBreakpoint:
            guard context.canCommand, context.canCancel else {
                state.flash = "a replay has no breakpoints: it shows what happened"
                return []
            }
            state.commandPrompt = CommandPrompt(kind: .breakpoint, text: state.filter)
            return []
        case .sendAtBreakpoint, .startAnswer, .failAtBreakpoint:
            guard let id = stopped(&state, context) else { return [] }
            switch action {
            case .sendAtBreakpoint: return [.command(.queue(.resolveBreakpoint(operation: id, resolution: .proceed)))]
            case .failAtBreakpoint: return [.command(.queue(.resolveBreakpoint(operation: id, resolution: .fail(.networkConnectionLost))))]
            default:
                state.commandPrompt = CommandPrompt(kind: .answer(operation: id), text: "503", suggested: true)
                return []
            }
        case .promptInput(let key):
            guard var prompt = state.commandPrompt else { return [] }
            switch key {
            case .character("\u{15}"): prompt.text = ""
            // A suggestion is replaced by what is typed, as selected text is.
            case .character(let c): prompt.text = (prompt.suggested ? "" : prompt.text) + String(c)
            case .backspace: prompt.text = String(prompt.text.dropLast())
            case .escape:
                state.commandPrompt = nil
                return []
            case .enter:
                state.commandPrompt = nil
                return submit(prompt, &state)
            }
            prompt.suggested = false
            state.commandPrompt = prompt
            return []
        default:
            return nil
        }
    }

    /// The Breakpoints screen's keys: move, Enter turns the selected one off or on, `d`
    /// removes it; nil for keys that act as anywhere (B, Esc, p, q).
    private static func listScreen(_ state: inout MonitorState, _ action: MonitorAction, _ context: Context) -> [MonitorEffect]? {
        let marks = context.model.breakpoints.values.sorted { $0.id < $1.id }
        let index = marks.firstIndex { $0.id == state.selectedBreakpoint } ?? 0
        func select(_ position: Int) {
            guard !marks.isEmpty else { return }
            state.selectedBreakpoint = marks[max(0, min(marks.count - 1, position))].id
        }
        switch action {
        case .down: select(index + 1)
        case .up: select(index - 1)
        case .top: select(0)
        case .bottom: select(marks.count - 1)
        case .open, .removeBreakpoint:
            guard marks.indices.contains(index) else {
                state.flash = "no breakpoints: B sets one"
                return []
            }
            guard context.canCommand, context.canCancel else {
                state.flash = "a replay has no breakpoints: it shows what happened"
                return []
            }
            let mark = marks[index]
            return [.command(.queue(action == .open ? .setBreakpointEnabled(id: mark.id, enabled: !mark.enabled) : .removeBreakpoint(id: mark.id)))]
        default:
            return nil
        }
        return []
    }

    /// The command a prompt's Enter sends, or the words for why not.
    private static func submit(_ prompt: CommandPrompt, _ state: inout MonitorState) -> [MonitorEffect] {
        let text = prompt.text.trimmingCharacters(in: .whitespaces)
        switch prompt.kind {
        case .breakpoint:
            guard !text.isEmpty else { return [.command(.queue(.clearBreakpoints))] }
            do {
                _ = try Breakpoint(parsing: text, setBy: "monitor")
            } catch {
                state.flash = "not a breakpoint: \(error)"
                return []
            }
            return [.command(.queue(.addBreakpoint(match: text)))]
        case .answer(let id):
            let parts = text.split(separator: " ", maxSplits: 1)
            guard let first = parts.first, let status = Int(first), (100...599).contains(status) else {
                state.flash = "not a status: \"\(text)\" (a number from 100 to 599, then the body if any)"
                return []
            }
            let body = parts.count > 1 ? Data(parts[1].utf8) : Data()
            let headers = body.first == UInt8(ascii: "{") || body.first == UInt8(ascii: "[") ? ["Content-Type": "application/json"] : [:]
            return [.command(.queue(.resolveBreakpoint(operation: id, resolution: .respond(status: status, headers: headers, body: body))))]
        }
    }

    /// The focused operation if it is stopped at a breakpoint; else nil, and why is said.
    private static func stopped(_ state: inout MonitorState, _ context: Context) -> String? {
        guard let id = focusedID(state), let row = context.model.row(id) else { return nil }
        guard case .breakpoint? = row.heldBy else {
            state.flash = "\(id) is not stopped at a breakpoint (B sets one)"
            return nil
        }
        guard context.canCommand else { return nil }
        return id
    }
}
