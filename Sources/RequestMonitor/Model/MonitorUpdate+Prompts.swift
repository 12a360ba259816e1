import Foundation

/// The update's prompts: the filter (`/`) and a replay's "go to time" (`:`).
extension MonitorUpdate {
    static func prompt(_ state: inout MonitorState, _ action: MonitorAction, canCommand: Bool) -> [MonitorEffect] {
        switch action {
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
                if let problem = RowFilter(state.filter).problems.first { state.flash = problem }
            case .escape: state.filterDraft = nil
            }
        case .startTimeJump:
            state.timeDraft = ""
        case .timeInput(let key):
            switch key {
            case .character("\u{15}"): state.timeDraft = ""
            case .character(let c): state.timeDraft = (state.timeDraft ?? "") + String(c)
            case .backspace: state.timeDraft = String((state.timeDraft ?? "").dropLast())
            case .escape: state.timeDraft = nil
            case .enter:
                let typed = state.timeDraft ?? ""
                state.timeDraft = nil
                guard let time = Self.sessionTime(typed) else {
                    state.flash = "not a time: \"\(typed)\" (90, 90.5, 1:30, 1:02:03, 1m30s, 2h)"
                    return []
                }
                guard canCommand else {
                    state.flash = "only a replay can go to a time"
                    return []
                }
                return [.command(.playback(.seekTo(time)))]
            }
        default:
            break
        }
        return []
    }

    /// A session time as a person types it: seconds (`90`, `90.5`), `m:ss` or `h:mm:ss`
    /// (`1:30`, `1:02:03`, as lnav and media players write times), or with units
    /// (`1m30s`, `2h`, `45s`). Nil when it is none of these or beyond a billion seconds.
    static func sessionTime(_ text: String) -> TimeInterval? {
        let typed = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard !typed.isEmpty else { return nil }
        var total: Double = 0
        if typed.contains(":") {
            let parts = typed.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 3 else { return nil }
            for part in parts {
                guard let value = Double(part), value >= 0, part.allSatisfy({ $0.isNumber || $0 == "." }) else { return nil }
                total = total * 60 + value
            }
        } else if typed.allSatisfy({ $0.isNumber || $0 == "." }) {
            guard let value = Double(typed) else { return nil }
            total = value
        } else {
            var number = ""
            for character in typed {
                if character.isNumber || character == "." {
                    number.append(character)
                    continue
                }
                guard let value = Double(number), let unit = ["h": 3600.0, "m": 60, "s": 1][String(character)] else { return nil }
                total += value * unit
                number = ""
            }
            guard number.isEmpty else { return nil }
        }
        return total.isFinite && total <= 1e9 ? total : nil
    }
}

extension MonitorUpdate {
    /// `/` in the Body tab: find a word in the bodies; `n`/`N` scroll to the next or previous
    /// line holding it (wrapping), and the view highlights every match.
    static func find(_ state: inout MonitorState, _ action: MonitorAction, model: QueueModel) {
        guard case .detail(let id, .body) = state.screen, let row = model.row(id)?.expanded() else { return }
        let lines = BodyTabLine.read(MonitorView.bodyTabLines(row: row, theme: Theme(color: false)))
        func go(forward: Bool) {
            guard let word = state.find, !word.isEmpty else { return }
            // The text after the gutter: a number in the gutter is not a match.
            let matching = lines.indices.filter { lines[$0].text.contains(word) }
            guard !matching.isEmpty else {
                state.flash = "\"\(word)\" is not in the bodies"
                return
            }
            let next = forward ? matching.first { $0 > state.bodyScroll } ?? matching[0]
                : matching.last { $0 < state.bodyScroll } ?? matching[matching.count - 1]
            state.bodyScroll = next
            // The line as the gutter numbers it, in the body it belongs to.
            let place = lines[next].number.map { "\(lines[next].section) line \($0)" } ?? lines[next].section
            state.flash = "\"\(word)\": \(place), match \(matching.firstIndex(of: next)! + 1) of \(matching.count) · n N"
        }
        switch action {
        case .startFind:
            state.findDraft = ""
        case .findInput(let key):
            switch key {
            case .character("\u{15}"): state.findDraft = ""
            case .character(let c): state.findDraft = (state.findDraft ?? "") + String(c)
            case .backspace: state.findDraft = String((state.findDraft ?? "").dropLast())
            case .escape: state.findDraft = nil
            case .enter:
                let word = (state.findDraft ?? "").lowercased()
                state.findDraft = nil
                state.find = word.isEmpty ? nil : word
                state.bodyScroll = -1
                go(forward: true)
                if state.bodyScroll < 0 { state.bodyScroll = 0 }
            }
        case .findNext: go(forward: true)
        case .findPrevious: go(forward: false)
        default: break
        }
    }
}

/// One line of the Body tab as find reads it: its text after the gutter, the number the
/// gutter shows (nil for a heading), and the body it is in (`request body`, `response body`).
struct BodyTabLine {
    var text: String
    var number: Int?
    var section: String

    static func read(_ lines: [[(String, CellGrid.Style)]]) -> [BodyTabLine] {
        var section = "heading"
        return lines.map { runs in
            let first = runs.first?.0 ?? ""
            let digits = first.trimmingCharacters(in: .whitespaces)
            if runs.count >= 1, first.hasSuffix("  "), let number = Int(digits), runs.first?.1.dim == true {
                return BodyTabLine(text: runs.dropFirst().map(\.0).joined().lowercased(), number: number, section: section)
            }
            let text = runs.map(\.0).joined()
            if text.hasPrefix("request body") { section = "request body" } else if text.hasPrefix("response body") { section = "response body" }
            return BodyTabLine(text: text.lowercased(), number: nil, section: text.hasPrefix("re") ? String(text.prefix { $0 != "·" }).trimmingCharacters(in: .whitespaces) : section)
        }
    }
}
