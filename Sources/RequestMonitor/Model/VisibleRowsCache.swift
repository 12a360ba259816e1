import Foundation

/// The visible rows, recomputed per model change without matching every row's text again:
/// a row's search text (id, host, path, method) is fixed once it is made, except when its
/// request is built (``QueueModel/searchKeyEdits``), so whether it matches the filter's
/// words is kept per row and worked out for new and edited rows only. State, status and
/// method words are checked on every row each time (they change as events arrive; a check
/// is a comparison). Gives exactly what ``VisibleRows/compute(_:filter:sort:now:)`` gives.
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
        if filterText != filter || layout != model.layout || textMatches.count > model.rows.count {
            filterText = filter
            layout = model.layout
            textMatches = []
            editsSeen = 0
        }
        let indices = model.rows.withUnsafeBufferPointer { rows -> [Int] in
            guard let base = rows.baseAddress else { return [] }
            for position in textMatches.count..<rows.count {
                textMatches.append(rowFilter.matches(base + position, text: true, others: false))
            }
            for position in model.searchKeyEdits.dropFirst(editsSeen) where position < rows.count {
                textMatches[position] = rowFilter.matches(base + position, text: true, others: false)
            }
            editsSeen = model.searchKeyEdits.count
            return textMatches.indices.filter { textMatches[$0] && rowFilter.matches(base + $0, text: false, others: true) }
        }
        return VisibleRows.sorted(indices, model, sort: sort, now: now)
    }
}
