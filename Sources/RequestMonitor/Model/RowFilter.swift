import Foundation

/// The `/` filter: words that must all match. A plain word matches the id, method, host or
/// path (ignoring case); `state:failed`, `status:503`, `status:5xx`, `method:POST` match
/// those fields.
public struct RowFilter: Sendable, Equatable {
    enum Term: Sendable, Equatable {
        case text(String)
        case state(String)
        case status(String)
        case method(String)
    }

    let terms: [Term]

    public init(_ text: String) {
        terms = text.split(separator: " ").map { word in
            let lower = word.lowercased()
            for (prefix, make) in [("state:", Term.state), ("status:", Term.status), ("method:", Term.method)] where lower.hasPrefix(prefix) {
                return make(String(lower.dropFirst(prefix.count)))
            }
            return .text(lower)
        }
    }

    public var isEmpty: Bool { terms.isEmpty }

    public func matches(_ row: OperationRow) -> Bool {
        terms.allSatisfy { term in
            switch term {
            case .text(let text):
                row.id.lowercased().contains(text) || row.host.lowercased().contains(text)
                    || row.path.lowercased().contains(text) || row.method.lowercased() == text
            case .state(let state):
                row.state.rawValue.hasPrefix(state) || (state == "ok" && row.state == .succeeded)
            case .status(let pattern):
                Self.status(row.status, matches: pattern)
            case .method(let method):
                row.method.lowercased() == method
            }
        }
    }

    /// `503`, or `5xx` / `5**` for a class.
    static func status(_ status: Int?, matches pattern: String) -> Bool {
        guard let status else { return pattern == "none" || pattern == "-" }
        let digits = Array(String(status))
        let wanted = Array(pattern)
        guard digits.count == wanted.count else { return false }
        return zip(digits, wanted).allSatisfy { $1 == "x" || $1 == "*" || $0 == $1 }
    }
}

/// The rows the table shows, filtered and sorted, as indices into the model's rows.
public enum VisibleRows {
    public static func compute(_ model: QueueModel, filter: String, sort: MonitorState.Sort, now: TimeInterval) -> [Int] {
        let rowFilter = RowFilter(filter)
        var indices = rowFilter.isEmpty ? Array(model.rows.indices) : model.rows.indices.filter { rowFilter.matches(model.rows[$0]) }
        switch sort {
        case .arrival:
            break
        case .state:
            let order = Dictionary(uniqueKeysWithValues: OperationRow.State.allCases.enumerated().map { ($1, $0) })
            indices.sort { (order[model.rows[$0].state]!, $0) < (order[model.rows[$1].state]!, $1) }
        case .duration:
            indices.sort { (-model.rows[$0].elapsed(at: now), $0) < (-model.rows[$1].elapsed(at: now), $1) }
        case .host:
            indices.sort { (model.rows[$0].host, $0) < (model.rows[$1].host, $1) }
        }
        return indices
    }
}
