import Foundation
import RequestOperations

/// Two operations side by side (`=` then `=`): the request line, headers and body, then the
/// answer's status, headers and body, each line marked where the two differ (`≠` changed,
/// `<` only on the left, `>` only on the right). Headers are lined up by name, bodies by a
/// line diff of the lines the Body tab prints (``LineDiff``), as `diff -u` lines them up.
extension MonitorView {
    /// One line of the comparison: the left and right text, and whether they differ.
    struct CompareLine: Equatable {
        var left: String
        var right: String
        var heading = false
        /// The line is on one side only (an added or removed body line, a header one has).
        var side: Side?

        enum Side: Equatable { case left, right }

        var differs: Bool { !heading && (side != nil || left != right) }
        /// The mark between the two sides.
        var mark: String { side == .left ? "<" : side == .right ? ">" : differs ? "≠" : "│" }
    }

    static func compareLines(_ a: OperationRow, _ b: OperationRow) -> [CompareLine] {
        var lines: [CompareLine] = []
        func heading(_ text: String) { lines.append(CompareLine(left: text, right: text, heading: true)) }
        func pair(_ left: String, _ right: String) { lines.append(CompareLine(left: left, right: right)) }
        func headers(_ left: [String: String], _ right: [String: String]) {
            let names = Set(left.keys.map { $0.lowercased() }).union(right.keys.map { $0.lowercased() }).sorted()
            func value(_ fields: [String: String], _ name: String) -> String {
                fields.first { $0.key.lowercased() == name }.map { "\($0.key): \($0.value)" } ?? ""
            }
            for name in names {
                let (l, r) = (value(left, name), value(right, name))
                lines.append(CompareLine(left: l, right: r, side: r.isEmpty ? .left : l.isEmpty ? .right : nil))
            }
        }
        func bodies(_ left: (Data?, String?), _ right: (Data?, String?)) {
            let l = left.0.map { BodyText.lines($0, mediaType: left.1).map(\.text) } ?? []
            let r = right.0.map { BodyText.lines($0, mediaType: right.1).map(\.text) } ?? []
            for row in LineDiff.rows(l, r) {
                switch row {
                case .same(let text): pair(text, text)
                case .changed(let old, let new): pair(old, new)
                case .onlyLeft(let text): lines.append(CompareLine(left: text, right: "", side: .left))
                case .onlyRight(let text): lines.append(CompareLine(left: "", right: text, side: .right))
                }
            }
        }
        func type(_ headers: [String: String]) -> String? { headers.first { $0.key.lowercased() == "content-type" }?.value }
        func data(_ body: RecordedBody?) -> Data? { if case .bytes(let data)? = body { data } else { nil } }

        heading("request")
        pair("\(a.method) \(a.url)", "\(b.method) \(b.url)")
        headers(a.requestHeaders, b.requestHeaders)
        if a.requestBody != nil || b.requestBody != nil {
            heading("request body")
            bodies((data(a.requestBody), type(a.requestHeaders)), (data(b.requestBody), type(b.requestHeaders)))
        }
        heading("response")
        func outcome(_ row: OperationRow) -> String {
            "\(row.status.map { "status \($0)" } ?? "no response") · \(row.state.rawValue) · \(row.attempt) attempt\(row.attempt == 1 ? "" : "s")"
        }
        pair(outcome(a), outcome(b))
        headers(a.responseHeaders, b.responseHeaders)
        if a.responseBody != nil || b.responseBody != nil {
            heading("response body")
            bodies((a.responseBody?.data, a.responseBody?.mediaType), (b.responseBody?.data, b.responseBody?.mediaType))
        }
        return lines
    }

    func drawCompare(_ grid: inout CellGrid, left: OperationRow, right: OperationRow) {
        let lines = Self.compareLines(left.expanded(), right.expanded())
        let half = (grid.width - 3) / 2
        let differences = lines.filter(\.differs).count
        grid.put(" \(left.id) ", x: 0, y: 2, style: CellGrid.Style(bold: true, reverse: true))
        grid.put(" \(right.id) ", x: half + 3, y: 2, style: CellGrid.Style(bold: true, reverse: true))
        grid.put("\(differences) line\(differences == 1 ? "" : "s") differ · ↑↓ PgUp PgDn scroll · Esc back", x: 1, y: 3, style: CellGrid.Style(dim: true))
        let room = grid.height - 5
        let first = max(0, min(state.bodyScroll, lines.count - room))
        let mark = CellGrid.Style(color: theme.color ? .yellow : .normal, bold: true)
        for (offset, line) in lines.dropFirst(first).prefix(room).enumerated() {
            let y = 4 + offset
            if line.heading {
                grid.put(line.left, x: 1, y: y, style: CellGrid.Style(bold: true))
                continue
            }
            let style: CellGrid.Style = line.differs ? mark : .plain
            grid.put(line.left, x: 1, y: y, style: style, limit: half)
            grid.put(line.mark, x: half + 1, y: y, style: line.differs ? mark : CellGrid.Style(dim: true))
            grid.put(line.right, x: half + 3, y: y, style: style, limit: grid.width - half - 3)
        }
    }
}
