import Foundation

/// The visible rows, recomputed per model change without matching every row's text again:
/// a row's search text (id, host, path, method) is fixed once it is made, except when its
/// request is built (``QueueModel/searchKeyEdits``), so whether it matches the filter's
/// words is kept per row and worked out for new and edited rows only. State, status and
/// method words are checked on every row each time (they change as events arrive; a check
/// is a comparison). A filter typed further (`ap` → `api-3`) looks again only at the rows
/// the shorter one matched. Gives exactly what ``VisibleRows/compute(_:filter:sort:now:)`` gives.
public struct VisibleRowsCache: Sendable {
    private var filterText: String?
    private var layout = -1
    /// Per row position: whether its search text has every word of the filter.
    private var textMatches: [Bool] = []
    private var editsSeen = 0

    public init() {}

    public mutating func compute(_ model: QueueModel, filter: String, sort: MonitorState.Sort, now: TimeInterval) -> [Int] {
        let rowFilter = RowFilter(filter)
        guard rowFilter.hasText else { return VisibleRows.compute(model, filter: filter, sort: sort, now: now) }
        // Typing more of a word narrows the matches: only rows that matched the shorter words
        // are looked at again (the first letters match most rows, cheaply).
        var narrowing = false
        if let filterText, filterText != filter, layout == model.layout, textMatches.count <= model.rows.count,
           editsSeen == model.searchKeyEdits.count, rowFilter.textNarrows(RowFilter(filterText)) {
            narrowing = true
        } else if filterText != filter || layout != model.layout || textMatches.count > model.rows.count {
            layout = model.layout
            textMatches = []
            editsSeen = 0
        }
        filterText = filter
        let rowCount = model.rows.count
        model.searchText.matcher(rowFilter.textWords) { hasWords in
            if narrowing {
                for position in textMatches.indices where textMatches[position] {
                    textMatches[position] = hasWords(position)
                }
            }
            for position in textMatches.count..<rowCount {
                textMatches.append(hasWords(position))
            }
            for position in model.searchKeyEdits.dropFirst(editsSeen) where position < rowCount {
                textMatches[position] = hasWords(position)
            }
        }
        editsSeen = model.searchKeyEdits.count
        let indices = rowFilter.hasOthers ? model.rows.withUnsafeBufferPointer { rows -> [Int] in
            guard let base = rows.baseAddress else { return [] }
            let content = model.content
            return textMatches.indices.filter { textMatches[$0] && rowFilter.matchesOthers(base + $0, position: $0, content: content) }
        } : textMatches.indices.filter { textMatches[$0] }
        return VisibleRows.sorted(indices, model, sort: sort, now: now)
    }
}
