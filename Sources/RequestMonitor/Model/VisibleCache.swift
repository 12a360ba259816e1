import Foundation

/// The filtered, sorted rows, recomputed only when the model, filter or sort changed
/// (durations change every frame, so that sort is recomputed each time).
struct VisibleCache {
    private var key: (version: Int, filter: String, sort: MonitorState.Sort)?
    private(set) var indices: [Int] = []
    private var idList: [String] = []
    /// Keeps each row's text match, so a change looks at new and edited rows only.
    private var rows = VisibleRowsCache()

    mutating func ids(model: QueueModel, state: MonitorState, now: TimeInterval) -> [String] {
        if let key, key.version == model.version, key.filter == state.filter, key.sort == state.sort, state.sort != .duration {
            return idList
        }
        indices = rows.compute(model, filter: state.filter, sort: state.sort, now: now)
        idList = indices.map { model.rows[$0].id }
        key = (model.version, state.filter, state.sort)
        return idList
    }
}
