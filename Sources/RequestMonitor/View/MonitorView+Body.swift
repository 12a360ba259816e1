import Foundation
import RequestOperations

/// The Body tab: the request's body and the last answer's, pretty-printed (``BodyText``),
/// with line numbers, scrolled by ↑/↓/PgUp/PgDn (`MonitorState.bodyScroll`).
extension MonitorView {
    /// The tab's lines: a heading per body, then its numbered lines.
    func bodyTabLines(row: OperationRow) -> [[(String, CellGrid.Style)]] {
        Self.bodyTabLines(row: row, theme: theme)
    }

    /// Laid out once per body (``BodyLayoutCache``), not on every frame.
    static func bodyTabLines(row: OperationRow, theme: Theme) -> [[(String, CellGrid.Style)]] {
        BodyLayoutCache.shared.lines(for: BodyLayoutCache.Key(row, color: theme.color)) { layOut(row: row, theme: theme) }
    }

    private static func layOut(row: OperationRow, theme: Theme) -> [[(String, CellGrid.Style)]] {
        var lines: [[(String, CellGrid.Style)]] = []
        func heading(_ text: String) { lines.append([(text, CellGrid.Style(bold: true))]) }
        func numbered(_ body: [BodyText.Line]) {
            let width = String(body.count).count
            for (index, line) in body.enumerated() {
                let number = String(index + 1)
                lines.append([(String(repeating: " ", count: width - number.count) + number + "  ", CellGrid.Style(dim: true))]
                             + line.runs.map { ($0.text, style($0.kind, theme)) })
            }
        }
        switch row.requestBody {
        case .bytes(let data)?:
            heading("request body · \(Format.bytes(data.count))")
            numbered(BodyText.lines(data, mediaType: row.requestHeaders.first { $0.key.lowercased() == "content-type" }?.value))
        case .omitted(let bytes, let reason)?:
            heading("request body · \(bytes.map(Format.bytes) ?? "size unknown") · not recorded: \(reason)")
        case nil:
            heading("request: no body")
        }
        lines.append([])
        guard let answer = row.responseBody else {
            let replaced = row.replacedAnswer.map { " · given at a breakpoint in place of the server's \($0.status)" } ?? ""
            heading(row.status == nil ? "no response yet" : "response \(row.status!): no body recorded (empty, or --body-cap 0)\(replaced)")
            return lines
        }
        let type = answer.mediaType.map { " · \($0)" } ?? ""
        switch answer.body {
        case .bytes(let data):
            let cut = answer.truncated ? " · first \(Format.bytes(data.count)) shown (truncated at the cap)" : ""
            let replaced = row.replacedAnswer.flatMap { $0.attempt == answer.attempt ? " · given at a breakpoint in place of the server's \($0.status)" : nil } ?? ""
            heading("response body (attempt \(answer.attempt)) · \(Format.bytes(answer.totalBytes))\(type)\(cut)\(replaced)")
            numbered(BodyText.lines(data, mediaType: answer.mediaType))
            if answer.truncated { lines.append([("\(theme.ellipsis) \(Format.bytes(answer.totalBytes - data.count)) more not recorded", CellGrid.Style(dim: true))]) }
        case .omitted(let bytes, let reason):
            heading("response body (attempt \(answer.attempt)) · \(Format.bytes(bytes ?? answer.totalBytes))\(type) · not recorded: \(reason)")
        }
        return lines
    }

    private static func style(_ kind: BodyText.Kind, _ theme: Theme) -> CellGrid.Style {
        let color = theme.color
        switch kind {
        case .plain, .punctuation: return .plain
        case .key: return CellGrid.Style(color: color ? .cyan : .normal, bold: !color)
        case .string: return CellGrid.Style(color: color ? .green : .normal)
        case .number: return CellGrid.Style(color: color ? .yellow : .normal)
        case .literal: return CellGrid.Style(color: color ? .magenta : .normal)
        case .note: return CellGrid.Style(dim: true)
        }
    }

    func drawBody(_ grid: inout CellGrid, row: OperationRow, from top: Int) {
        let lines = bodyTabLines(row: row)
        let room = grid.height - 5
        let first = max(0, min(top, lines.count - room))
        let width = max(10, grid.width - 2)
        var y = 4
        let word = state.find.flatMap { $0.isEmpty ? nil : Array($0) }
        let found = CellGrid.Style(color: theme.color ? .yellow : .normal, bold: true, reverse: true)
        var shownLast = first - 1
        for index in first..<max(first, lines.count) {
            guard y < 4 + room else { break }
            let line = lines[index]
            // The line as cells, every match of the find word marked, then wrapped to the
            // width: a long line goes on under itself, past its number, never cut. Only as
            // much of it as the screen has room for is made into cells: a 10 MB line costs a
            // frame what a screenful does.
            let window = (4 + room - y + 1) * width + (word?.count ?? 0)
            var cells: [(Character, CellGrid.Style)] = []
            for run in line where cells.count < window {
                for character in run.0 {
                    guard cells.count < window else { break }
                    cells.append((character, run.1))
                }
            }
            if let word, word.count <= cells.count {
                let lower = cells.map { Character($0.0.lowercased()) }
                for start in 0...(cells.count - word.count) where Array(lower[start..<start + word.count]) == word {
                    for offset in start..<start + word.count { cells[offset].1 = found }
                }
            }
            let gutter = line.count > 1 && line[0].1 == CellGrid.Style(dim: true) ? min(line[0].0.count, width / 2) : 0
            var rest = cells[...]
            var continuation = false
            repeat {
                var take = continuation ? width - gutter : width
                // At a space when there is one in the last third: words stay whole.
                if rest.count > take, let space = rest.prefix(take).lastIndex(where: { $0.0 == " " }),
                   space - rest.startIndex > take * 2 / 3 {
                    take = space - rest.startIndex + 1
                }
                let chunk = rest.prefix(take)
                rest = rest.dropFirst(take)
                var x = 1 + (continuation ? gutter : 0)
                var run = "", style = chunk.first?.1 ?? .plain
                for (character, cellStyle) in chunk {
                    if cellStyle != style {
                        x = grid.put(run, x: x, y: y, style: style)
                        (run, style) = ("", cellStyle)
                    }
                    run.append(character)
                }
                grid.put(run, x: x, y: y, style: style)
                y += 1
                continuation = true
            } while !rest.isEmpty && y < 4 + room
            shownLast = index
        }
        if let draft = state.findDraft {
            grid.put(" find: \(draft)_ ", x: 1, y: 3, style: CellGrid.Style(bold: true, reverse: true))
        }
        if lines.count > room || shownLast < lines.count - 1 {
            grid.put(" lines \(first + 1)–\(shownLast + 1) of \(lines.count) · ↑↓ PgUp PgDn scroll ", x: max(0, grid.width - 50), y: 3,
                     style: CellGrid.Style(dim: true))
        }
    }

}
