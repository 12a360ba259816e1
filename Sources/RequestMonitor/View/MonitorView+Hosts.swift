import Foundation

/// The Hosts screen (`H`): one line per host, from ``HostSummary``.
extension MonitorView {
    private struct HostColumn: Sendable {
        let title: String
        let width: Int
        /// The cell for a host at session time `now`.
        let value: @Sendable (HostSummary, TimeInterval) -> String
    }

    private static let hostColumns: [HostColumn] = [
        HostColumn(title: "IN FLIGHT", width: 9) { s, _ in "\(s.inFlight)" },
        HostColumn(title: "WAITING", width: 7) { s, _ in "\(s.waiting)" },
        HostColumn(title: "BREAKER", width: 10) { s, now in s.circuit?.label(now: now) ?? "closed" },
        HostColumn(title: "PAUSED", width: 6) { s, now in s.pausedUntil.flatMap { $0 > now ? Format.seconds($0 - now) : nil } ?? "-" },
        HostColumn(title: "OPS", width: 7) { s, _ in "\(s.operations)" },
        HostColumn(title: "RETRIES", width: 7) { s, _ in "\(s.retries)" },
        HostColumn(title: "BUDGET", width: 6) { s, _ in s.budgetLeft.map(String.init) ?? "-" },
        HostColumn(title: "REFUSED", width: 7) { s, _ in "\(s.denied)" },
        HostColumn(title: "OK", width: 7) { s, _ in "\(s.succeeded)" },
        HostColumn(title: "FAILED", width: 7) { s, _ in "\(s.failed)" },
        HostColumn(title: "FAIL %", width: 6) { s, _ in s.failureRatio.map { String(format: "%.0f%%", $0 * 100) } ?? "-" },
        HostColumn(title: "P50", width: 6) { s, _ in s.p50.map(Format.duration) ?? "-" },
        HostColumn(title: "P95", width: 6) { s, _ in s.p95.map(Format.duration) ?? "-" },
        HostColumn(title: "INJECTED", width: 8) { s, _ in s.injected == 0 ? "-" : "\(s.injected)" },
    ]

    func drawHosts(_ grid: inout CellGrid) {
        let hosts = HostSummary.compute(model, byProgram: state.hostsByProgram)
        let titleStyle = CellGrid.Style(bold: true, reverse: true)
        grid.fill(y: 2, style: titleStyle)
        // Columns that do not fit are left out from the right; the host takes what is left.
        var columns = Self.hostColumns
        let hostWidth = min(32, max(8, hosts.map(\.host.count).max() ?? 8))
        while !columns.isEmpty, 1 + hostWidth + columns.reduce(0, { $0 + $1.width + 1 }) > grid.width { columns.removeLast() }
        var x = grid.put(fit("HOST", hostWidth), x: 1, y: 2, style: titleStyle) + 1
        for column in columns {
            x = grid.put(Format.right(column.title, column.width), x: x, y: 2, style: titleStyle) + 1
        }
        guard !hosts.isEmpty else {
            grid.put("no operation yet" + theme.ellipsis, x: 2, y: 4, style: CellGrid.Style(dim: true))
            return
        }
        // A merged view's programs take the bottom of the screen (their title, one line each).
        let programsHeight = state.programs.isEmpty ? 0 : min(state.programs.count + 2, max(0, Self.pageSize(height: grid.height) / 2))
        let room = max(1, Self.pageSize(height: grid.height) - programsHeight)
        if programsHeight > 0 { drawPrograms(&grid, top: 3 + room + 1, lines: programsHeight - 2) }
        let selected = hosts.firstIndex { $0.host == state.selectedHost } ?? 0
        let first = max(0, selected - room + 1)
        for (line, summary) in hosts.dropFirst(first).prefix(room).enumerated() {
            let y = 3 + line
            // The selected host (for i and c) is drawn reversed, as the table's selected row.
            let isSelected = first + line == selected
            if isSelected { grid.fill(y: y, style: CellGrid.Style(reverse: true)) }
            let open = summary.circuit.map { $0.state != .closed } ?? false
            var style: CellGrid.Style = open || summary.failed > 0 || summary.denied > 0 ? theme.style(.failed)
                : summary.inFlight + summary.waiting > 0 ? theme.style(.running) : .plain
            var cellStyle = CellGrid.Style.plain
            if isSelected {
                style.reverse = true
                cellStyle.reverse = true
            }
            var x = grid.put(fit(summary.host, hostWidth), x: 1, y: y, style: style) + 1
            for column in columns {
                x = grid.put(Format.right(column.value(summary, now), column.width), x: x, y: y, style: cellStyle) + 1
            }
        }
        if hosts.count > first + room {
            grid.put("\(theme.ellipsis) \(hosts.count - first - room) more hosts", x: 1, y: 3 + room - 1, style: CellGrid.Style(dim: true))
        }
    }

    /// The PROGRAMS panel of a merged view: each program, whether it is still there, its
    /// queue, its events a second, its faults.
    private func drawPrograms(_ grid: inout CellGrid, top: Int, lines: Int) {
        let titleStyle = CellGrid.Style(bold: true, reverse: true)
        grid.fill(y: top, style: titleStyle)
        let labelWidth = min(32, max(7, state.programs.map(\.label.count).max() ?? 7))
        var x = grid.put(fit("PROGRAM", labelWidth), x: 1, y: top, style: titleStyle) + 1
        for (title, width) in [("STATE", 9), ("LIVE", 6), ("EVENTS/S", 8), ("FAULTS", 6), ("COMMANDS", 9)] {
            x = grid.put(Format.right(title, width), x: x, y: top, style: titleStyle) + 1
        }
        for (line, program) in state.programs.prefix(lines).enumerated() {
            let y = top + 1 + line
            let style: CellGrid.Style = switch program.state {
            case .ended: CellGrid.Style(dim: true)
            case .paused: theme.style(.held)
            case .attached: program.live > 0 ? theme.style(.running) : .plain
            }
            let state = switch program.state {
            case .attached: "attached"
            case .paused: "paused"
            case .ended: "ended"
            }
            var x = grid.put(fit(program.label, labelWidth), x: 1, y: y, style: style) + 1
            for (cell, width) in [(state, 9), ("\(program.live)", 6), (String(format: "%.0f", program.eventsPerSecond), 8),
                                  (program.faults == 0 ? "-" : "\(program.faults)", 6), (program.readOnly ? "refused" : "taken", 9)] {
                x = grid.put(Format.right(cell, width), x: x, y: y, style: style) + 1
            }
        }
        if state.programs.count > lines {
            grid.put("\(theme.ellipsis) \(state.programs.count - lines) more programs", x: 1, y: top + lines, style: CellGrid.Style(dim: true))
        }
    }
}
