import Foundation
import RequestOperations

/// Draws the monitor into a ``CellGrid``: a pure function of the model, the monitor state,
/// the size and the time. Only the rows on screen are drawn, whatever the queue's size.
public struct MonitorView {
    public var model: QueueModel
    public var state: MonitorState
    /// Indices into `model.rows`, filtered and sorted (see ``VisibleRows``).
    public var visible: [Int]
    public var theme: Theme
    /// Session time now, for countdowns and running durations.
    public var now: TimeInterval

    /// Below this the monitor only says the terminal is too small.
    public static let minimumSize = (width: 60, height: 12)
    /// Rows above and below the table: two header lines, the column titles, the bottom bar.
    static let chromeHeight = 4

    public init(model: QueueModel, state: MonitorState, visible: [Int], theme: Theme, now: TimeInterval) {
        self.model = model
        self.state = state
        self.visible = visible
        self.theme = theme
        self.now = now
    }

    func fit(_ text: String, _ width: Int, ellipsis: String? = nil) -> String {
        Format.fit(text, width, ellipsis: ellipsis ?? theme.ellipsis)
    }

    /// A countdown in tenths, rounded up, so it never reads 0.0 while still waiting.
    static func countdown(_ seconds: TimeInterval) -> String {
        String(format: "%.1fs", (seconds * 10).rounded(.up) / 10)
    }

    /// Table rows that fit a terminal `height` high.
    public static func pageSize(height: Int) -> Int {
        max(1, height - chromeHeight)
    }

    /// The first row to show so that the selection is on screen.
    public static func scroll(current: Int, selected: Int?, count: Int, pageSize: Int) -> Int {
        var top = min(max(0, current), max(0, count - pageSize))
        if let selected {
            if selected < top { top = selected }
            if selected >= top + pageSize { top = selected - pageSize + 1 }
        }
        return max(0, top)
    }

    public func render(width: Int, height: Int) -> CellGrid {
        var grid = CellGrid(width: width, height: height)
        guard width >= Self.minimumSize.width, height >= Self.minimumSize.height else {
            // Short lines, so the message itself fits a tiny terminal.
            grid.put("terminal too small", x: 0, y: max(0, height / 2 - 1), style: CellGrid.Style(bold: true))
            grid.put("\(width)\(theme.times)\(height), needs \(Self.minimumSize.width)\(theme.times)\(Self.minimumSize.height)", x: 0, y: height / 2)
            return grid
        }
        drawHeader(&grid)
        switch state.screen {
        case .table:
            drawTable(&grid)
        case .detail(let id, let tab):
            if let row = model.row(id) { drawDetail(&grid, row: row.expanded(), tab: tab) }
        case .hosts:
            drawHosts(&grid)
        case .breakpoints:
            drawBreakpoints(&grid)
        case .compare(let left, let right):
            if let a = model.row(left), let b = model.row(right) { drawCompare(&grid, left: a, right: b) }
        }
        drawBottomLine(&grid)
        if state.showHelp { drawHelp(&grid) }
        return grid
    }

    // MARK: - Header

    private func drawHeader(_ grid: inout CellGrid) {
        let bar = CellGrid.Style(reverse: true)
        grid.fill(y: 0, style: bar)
        // The clock first, at the right; the rest from the left, each part whole or not at
        // all, so nothing is written over the clock at any width (it was at 60–79 columns).
        let clock = "t=\(Format.seconds(now)) "
        let limit = grid.width - clock.count - 1
        grid.put(clock, x: grid.width - clock.count, y: 0, style: bar)
        var x = grid.put(" reqtop ", x: 0, y: 0, style: CellGrid.Style(bold: true, reverse: true), limit: max(0, limit))
        func part(_ text: String, gap: Int = 0, style: CellGrid.Style) {
            guard x + gap + text.count <= limit else { return }
            x = grid.put(text, x: x + gap, y: 0, style: style)
        }
        // A replay's status says PAUSED itself; an attached program's gets it added. It comes
        // before the source's name: on a narrow screen it is what matters more.
        let mode = state.ended ?? state.playback.map { state.paused && !$0.saysPaused ? "\($0.text) PAUSED" : $0.text }
            ?? (state.paused ? "PAUSED" : (state.follow ? "FOLLOW" : ""))
        if !mode.isEmpty {
            part(" \(mode) ", style: CellGrid.Style(color: theme.color ? (state.paused ? .yellow : .green) : .normal, bold: true, reverse: true))
        }
        if state.faultsOn {
            part(" FAULTS ON ", gap: 1, style: CellGrid.Style(color: theme.color ? .red : .normal, bold: true, reverse: true))
        }
        let room = limit - x - 4
        if room >= 4 { part(" \(theme.separator) \(fit(model.source, min(model.source.count, room), ellipsis: theme.ellipsis)) ", style: bar) }
        if !state.filter.isEmpty { part("  filter: \(state.filter)", style: CellGrid.Style(bold: true, reverse: true)) }
        part("  sort: \(state.sort.rawValue)", style: bar)

        x = 1
        // Room is kept at the right for the table's position ("51–58 of 58"); each count is
        // drawn whole or not at all.
        let scrolling = visible.count > Self.pageSize(height: grid.height)
        let countsLimit = grid.width - (scrolling ? 2 * String(visible.count).count + 8 : 0) - 1
        for state in [OperationRow.State.running, .backoff, .queued, .preparing, .held, .succeeded, .relayed, .failed, .cancelled] {
            let count = model.counts[state, default: 0]
            // States most sessions never see are counted only once they have a row (`relayed`
            // is a transparent proxy's).
            if count == 0, state == .preparing || state == .held || state == .relayed { continue }
            let text = "\(theme.glyph(state)) \(count) \(theme.word(state))"
            guard x + text.count <= countsLimit else { break }
            x = grid.put(text, x: x, y: 1, style: count > 0 ? theme.style(state) : CellGrid.Style(dim: true))
            x += 2
        }
        let rate = String(format: "%.1f req/s", model.requestsPerSecond(at: now))
        let letGo = model.forgotten > 0 ? " (\(model.forgotten) finished let go)" : ""
        let totals = grid.width >= 110 ? "  \(model.totalOperations) ops\(letGo)  \(model.eventCount) events" : ""
        if x + 1 + rate.count + totals.count <= countsLimit {
            x = grid.put(rate + totals, x: x + 1, y: 1, style: CellGrid.Style(dim: true))
        } else if x + 1 + rate.count <= countsLimit {
            x = grid.put(rate, x: x + 1, y: 1, style: CellGrid.Style(dim: true))
        }
    }

    // MARK: - Table

    /// The table's columns, by what they show; the heading is the raw value.
    enum TableColumn: String, CaseIterable {
        case id = "ID", program = "PROGRAM", state = "STATE", method = "METH", host = "HOST", path = "PATH", status = "STAT", attempts = "ATT"
        case wait = "WAIT", duration = "DUR", size = "SIZE", timeline = "TIMELINE"
    }

    struct Column {
        var kind: TableColumn
        var width: Int
        var right = false
        var title: String { kind.rawValue }
    }

    /// The table's columns for `width`: ID and HOST as wide as what the visible rows hold
    /// (within bounds), PATH the rest; PROGRAM only while a row on screen names one (a
    /// proxy's client); when the width is short, whole columns are left out, least needed
    /// first (TIMELINE, PROGRAM, HOST, SIZE, METH, WAIT), so a value is never drawn under
    /// another column's heading.
    /// - Parameter page: the indices (into `visible`) of the rows on screen; the ID and HOST
    ///   columns fit what those hold. Measuring every visible row instead cost 150 ms a
    ///   frame at 100,000 rows.
    func columns(width: Int, page: Range<Int>? = nil) -> [Column] {
        let onScreen = page ?? 0..<min(visible.count, 200)
        var idWidth = 6, hostWidth = 8, programWidth = 0
        for position in onScreen {
            let row = visible[position]
            idWidth = max(idWidth, model.rows[row].id.utf8.count)
            hostWidth = max(hostWidth, model.rows[row].host.utf8.count)
            if let origin = model.rows[row].origin { programWidth = max(programWidth, 7, origin.count) }
        }
        idWidth = min(28, idWidth)
        hostWidth = min(24, hostWidth)
        var columns = [Column(kind: .id, width: idWidth)]
        if programWidth > 0 { columns.append(Column(kind: .program, width: min(22, programWidth))) }
        columns += [Column(kind: .state, width: 11), Column(kind: .method, width: 7),
                       Column(kind: .host, width: hostWidth), Column(kind: .path, width: 0),
                       Column(kind: .status, width: 4, right: true), Column(kind: .attempts, width: 5, right: true),
                       Column(kind: .wait, width: 7, right: true), Column(kind: .duration, width: 6, right: true),
                       Column(kind: .size, width: 6, right: true), Column(kind: .timeline, width: width >= 200 ? 24 : 14)]
        let minimumPath = 12
        func used() -> Int { columns.reduce(1) { $0 + ($1.kind == .path ? minimumPath : $1.width) + 1 } }
        for kind in [TableColumn.timeline, .program, .host, .size, .method, .wait] where used() > width {
            // PROGRAM narrows before it goes: its name gives way, its pid stays (`reqtop… 4121`).
            if kind == .program, let program = columns.firstIndex(where: { $0.kind == .program }) {
                columns[program].width = max(12, columns[program].width - (used() - width))
                if used() <= width { break }
            }
            columns.removeAll { $0.kind == kind }
        }
        // Still too wide (under 60 columns): the id gives way down to 6.
        if used() > width, let id = columns.firstIndex(where: { $0.kind == .id }) {
            columns[id].width = max(6, columns[id].width - (used() - width))
        }
        let path = columns.firstIndex { $0.kind == .path }!
        columns[path].width = max(6, width - (used() - minimumPath) - 1)
        return columns
    }

    private func drawTable(_ grid: inout CellGrid) {
        let pageSize = Self.pageSize(height: grid.height)
        // Found by row index, comparing integers, not ids (string comparisons over 100,000
        // rows were a frame's worth).
        let selectedIndex = state.selectedID.flatMap { model.index(of: $0) }.flatMap { visible.firstIndex(of: $0) }
        let top = Self.scroll(current: state.scroll, selected: selectedIndex, count: visible.count, pageSize: pageSize)
        let columns = columns(width: grid.width, page: top..<min(visible.count, top + pageSize))
        let titleStyle = CellGrid.Style(bold: true, reverse: true)
        grid.fill(y: 2, style: titleStyle)
        var x = 1
        for column in columns {
            grid.put(column.right ? Format.right(column.title, column.width) : fit(column.title, column.width), x: x, y: 2, style: titleStyle)
            x += column.width + 1
        }
        if visible.isEmpty {
            let message = model.rows.isEmpty ? "waiting for the first operation" + theme.ellipsis : "no operation matches the filter \"\(state.filter)\""
            grid.put(message, x: 2, y: 4, style: CellGrid.Style(dim: true))
            return
        }
        for line in 0..<min(pageSize, visible.count - top) {
            let row = model.rows[visible[top + line]]
            let y = 3 + line
            drawRow(&grid, row: row, y: y, columns: columns)
            if top + line == selectedIndex {
                // One even bar, as in htop: colours inside a reversed row read as patches.
                grid.fill(y: y, style: CellGrid.Style(color: theme.color ? .cyan : .normal, bold: true, reverse: true))
            }
        }
        if visible.count > pageSize {
            let position = " \(top + 1)\(theme.dash)\(min(visible.count, top + pageSize)) of \(visible.count) "
            grid.put(position, x: grid.width - position.count, y: 1, style: CellGrid.Style(bold: true))
        }
    }

    private func drawRow(_ grid: inout CellGrid, row: OperationRow, y: Int, columns: [Column]) {
        let stateStyle = theme.style(row.state)
        var x = 1
        for column in columns {
            let width = column.width
            var style = CellGrid.Style.plain
            let text: String
            switch column.kind {
            case .id:
                text = fit(row.id, width, ellipsis: theme.ellipsis)
                style.bold = true
            case .state:
                text = fit("\(theme.glyph(row.state)) \(theme.word(row.state))", width)
                style = stateStyle
            case .program:
                text = Self.fitKeepingPID(row.origin ?? "", width, ellipsis: theme.ellipsis)
                style.dim = true
            case .method: text = fit(row.method, width)
            case .host: text = fit(row.host, width, ellipsis: theme.ellipsis)
            case .path: text = fit(row.path, width, ellipsis: theme.ellipsis)
            case .status:
                // `!`: an attempt of it was answered (or failed) by reqtop, not the server.
                // A gRPC call: its own status (`g0`, `g14`), every call's HTTP status being 200.
                text = Format.right((row.grpcStatus.map { "g\($0)" } ?? row.status.map(String.init) ?? "-") + (row.injected ? "!" : ""), width)
                if let status = row.grpcStatus, theme.color {
                    style.color = status == 0 ? .green : [1, 5, 6, 9, 10, 11].contains(status) ? .yellow : .red
                } else if let status = row.status, theme.color {
                    style.color = status >= 500 ? .red : status >= 400 ? .yellow : status >= 300 ? .cyan : .green
                }
            case .attempts: text = Format.right(row.maxAttempts.map { "\(row.attempt)/\($0)" } ?? "\(row.attempt)", width)
            case .wait:
                text = Format.right(row.countdown(at: now).map(Self.countdown) ?? row.heldByShort.map { fit($0, width, ellipsis: theme.ellipsis) } ?? "", width)
                style = CellGrid.Style(color: theme.color ? .yellow : .normal, bold: true)
            case .duration: text = Format.right(Format.duration(row.elapsed(at: now)), width)
            case .size: text = Format.right(Self.size(of: row, at: now), width)
            case .timeline:
                drawTimeline(&grid, row: row, x: x, y: y, width: width)
                x += width + 1
                continue
            }
            grid.put(text, x: x, y: y, style: style)
            x += width + 1
        }
    }

    /// Where `time` falls in a lifetime from `start` lasting `span`, from 0 to 1. Clamped:
    /// events of a recording need not be in time order (a segment may start before its
    /// operation was queued), and a bar drawn from a negative cell trapped the monitor.
    static func fraction(_ time: TimeInterval, from start: TimeInterval, span: TimeInterval) -> Double {
        guard span > 0 else { return 0 }
        return max(0, min(1, (time - start) / span))
    }

    /// The operation's attempts (solid) and waits (light) across its own lifetime. Every
    /// segment gets at least one cell, and attempts are drawn last, so a millisecond attempt
    /// between two long waits still shows.
    private func drawTimeline(_ grid: inout CellGrid, row: OperationRow, x: Int, y: Int, width: Int) {
        let start = row.queuedAt
        let span = max(row.finishedAt ?? now, start + 0.001) - start
        func cells(_ segment: OperationRow.Segment) -> Range<Int> {
            let from = min(width - 1, Int(Double(width) * Self.fraction(segment.start, from: start, span: span)))
            let to = min(width, Int((Double(width) * Self.fraction(segment.end ?? now, from: start, span: span)).rounded(.up)))
            return from..<max(from + 1, to)
        }
        for segment in row.segments where segment.kind == .wait {
            grid.put(String(repeating: theme.waitBar, count: cells(segment).count), x: x + cells(segment).lowerBound, y: y,
                     style: CellGrid.Style(color: theme.color ? .yellow : .normal))
        }
        for segment in row.segments where segment.kind != .wait {
            let style = theme.style(row.state == .backoff ? .failed : row.state)
            grid.put(String(repeating: theme.attemptBar, count: cells(segment).count), x: x + cells(segment).lowerBound, y: y, style: style)
        }
    }

    // MARK: - Bottom line and help

    private func drawBottomLine(_ grid: inout CellGrid) {
        let y = grid.height - 1
        if let draft = state.filterDraft {
            grid.fill(y: y, style: CellGrid.Style(reverse: true))
            grid.put(" filter: \(draft)_   (Enter apply, Esc cancel, Ctrl-U clear; e.g. state:failed status:5xx method:POST)", x: 0, y: y,
                     style: CellGrid.Style(bold: true, reverse: true))
            return
        }
        if let prompt = state.commandPrompt {
            grid.fill(y: y, style: CellGrid.Style(reverse: true))
            grid.put(" \(prompt.label) \(prompt.text)_   \(prompt.hint)", x: 0, y: y, style: CellGrid.Style(bold: true, reverse: true))
            return
        }
        if let draft = state.timeDraft {
            grid.fill(y: y, style: CellGrid.Style(reverse: true))
            grid.put(" go to time: \(draft)_   (Enter go, Esc cancel; 90, 1:30, 1m30s)", x: 0, y: y, style: CellGrid.Style(bold: true, reverse: true))
            return
        }
        if let confirmation = state.confirmation {
            let question = switch confirmation {
            case .cancel(let id): " Cancel \(id)? (y/n) "
            case .cancelAll: " Cancel every operation? (y/n) "
            }
            grid.put(question, x: 0, y: y, style: CellGrid.Style(color: theme.color ? .red : .normal, bold: true, reverse: true))
            return
        }
        if let flash = state.flash {
            grid.put(" \(flash)", x: 0, y: y, style: CellGrid.Style(bold: true))
            return
        }
        let detail = switch state.screen { case .detail, .compare: true; default: false }
        var stopped = false
        if case .detail(let id, _) = state.screen, case .breakpoint? = model.row(id)?.heldBy { stopped = true }
        let hints = KeyMap.barHints(detail: detail, paused: state.paused, held: model.counts[.held, default: 0] > 0,
                                    hosts: state.screen == .hosts, stopped: stopped, breakpoints: state.screen == .breakpoints,
                                    merged: !state.programs.isEmpty)
        var x = 0
        for (key, label) in hints {
            guard x + key.count + label.count <= grid.width else { break }  // whole hints only
            x = grid.put(key, x: x, y: y, style: CellGrid.Style(bold: true))
            x = grid.put(label, x: x, y: y, style: CellGrid.Style(color: theme.color ? .cyan : .normal, reverse: true))
            x += 1
        }
    }

    private func drawHelp(_ grid: inout CellGrid) {
        let all = KeyMap.helpLines.map { "\(fit($0.keys, 9)) \($0.help)" }
        // A blank line under the title while there is room for it.
        let gap = all.count + 4 <= grid.height - 2 ? 1 : 0
        let lines = all
        let width = min(grid.width - 4, (lines.map(\.count).max() ?? 0) + 4)
        let height = min(grid.height - 2, lines.count + 3 + gap)
        let left = (grid.width - width) / 2
        let top = max(1, (grid.height - height) / 2)
        let frame = CellGrid.Style(bold: true, reverse: true)
        let border = theme.unicode ? "│" : "|"
        for y in top..<(top + height) {
            grid.put(border + String(repeating: " ", count: width - 2) + border, x: left, y: y, style: .plain)
        }
        let room = height - 3 - gap
        // Taller than the screen: it scrolls, and its last line says where it is.
        let first = max(0, min(state.helpScroll, lines.count - room))
        let scrolls = lines.count > room
        grid.put(fit(" reqtop keys" + (scrolls ? " · \(first + 1)–\(min(lines.count, first + room)) of \(lines.count)" : ""), width),
                 x: left, y: top, style: frame)
        for (offset, line) in lines.dropFirst(first).prefix(room).enumerated() {
            grid.put(line, x: left + 2, y: top + 1 + gap + offset, limit: width - 3)
        }
        grid.put(fit(scrolls ? " ↑↓ PgUp PgDn scroll · Esc or ? closes this help" : " Esc or ? closes this help", width),
                 x: left, y: top + height - 1, style: frame)
    }
}

extension MonitorView {
    /// The SIZE column: a transfer under way as its share (`40%`; `↑40%` for a body going up,
    /// which showed nothing), or its bytes when no length says the whole (`↑1.2G`, and a
    /// compressed answer, whose length is the wire's); else the body's size.
    static func size(of row: OperationRow, at now: TimeInterval) -> String {
        guard let transfer = row.transfer(at: now) else { return row.bytes > 0 ? Format.bytes(row.bytes) : "" }
        let arrow = transfer.direction == .up ? "↑" : ""
        if transfer.encoding == nil, let expected = transfer.expected, expected > 0 {
            return arrow + "\(min(100, transfer.bytes * 100 / expected))%"
        }
        return arrow + Format.bytes(transfer.bytes)
    }

    /// `reqtop demo 4121` in `width`: the name shortened before the pid that tells programs
    /// apart (`reqtop… 4121`); anything else as `fit` cuts it.
    static func fitKeepingPID(_ text: String, _ width: Int, ellipsis: String) -> String {
        guard text.count > width, let space = text.lastIndex(of: " "), text[text.index(after: space)...].allSatisfy(\.isNumber) else {
            return Format.fit(text, width, ellipsis: ellipsis)
        }
        let pid = String(text[space...])
        let room = width - pid.count - ellipsis.count
        guard room >= 1 else { return Format.fit(text, width, ellipsis: ellipsis) }
        return String(text[..<space].prefix(room)) + ellipsis + pid
    }
}
