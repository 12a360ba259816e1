import Foundation

/// The Breakpoints screen (`L`): every breakpoint set, on or off, and how many operations
/// each holds now.
extension MonitorView {
    func drawBreakpoints(_ grid: inout CellGrid) {
        let marks = model.breakpoints.values.sorted { $0.id < $1.id }
        let titleStyle = CellGrid.Style(bold: true, reverse: true)
        grid.fill(y: 2, style: titleStyle)
        grid.put(" #    STAGE            STATE  STOPPED  SET BY                 MATCH", x: 0, y: 2, style: titleStyle)
        guard !marks.isEmpty else {
            grid.put("no breakpoints: B sets one (a match such as path:/v1 method:POST; \"after …\" stops after the answer)",
                     x: 2, y: 4, style: CellGrid.Style(dim: true))
            return
        }
        // How many operations each holds now.
        var stopped: [Int: Int] = [:]
        for row in model.rows where row.state == .held {
            if case .breakpoint(let id, _, _)? = row.heldBy { stopped[id, default: 0] += 1 }
        }
        let selected = marks.firstIndex { $0.id == state.selectedBreakpoint } ?? 0
        for (line, mark) in marks.prefix(Self.pageSize(height: grid.height)).enumerated() {
            let y = 3 + line
            var style: CellGrid.Style = mark.enabled ? theme.style(.held) : CellGrid.Style(dim: true)
            if line == selected {
                grid.fill(y: y, style: CellGrid.Style(reverse: true))
                style.reverse = true
            }
            let text = " " + fit("\(mark.id)", 4) + " " + fit(mark.afterResponse ? "after the answer" : "before sending", 16) + " "
                + fit(mark.enabled ? "on" : "off", 6) + " " + Format.right("\(stopped[mark.id, default: 0])", 7) + "  "
                + fit(mark.setter, mark.program == nil ? 22 : 40) + " " + (mark.rule.isEmpty ? "(every request)" : mark.rule)
            grid.put(text, x: 0, y: y, style: style)
        }
    }
}
