import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `/` filter: words that must all match. A plain word matches the id, method, host or
/// path (ignoring case); `state:failed`, `status:503`, `status:5xx`, `method:POST` match
/// those fields.
public struct RowFilter: Sendable, Equatable {
    enum Term: Sendable, Equatable {
        /// Lower-cased UTF-8, searched for in each row's ``OperationRow/searchKey``.
        case text([UInt8])
        /// The states the word names (`fail` → failed), worked out once, as a bit per state
        /// (``OperationRow/State/rank``): checking a set hashed the state for every row.
        case state(UInt16)
        case status(String)
        case method(String)
    }

    let terms: [Term]

    public init(_ text: String) {
        terms = text.split(separator: " ").map { word in
            let lower = word.lowercased()
            if lower.hasPrefix("state:") {
                let word = String(lower.dropFirst("state:".count))
                return .state(OperationRow.State.allCases.filter { Self.state($0, matches: word) }.reduce(0) { $0 | 1 << $1.rank })
            }
            for (prefix, make) in [("status:", Term.status), ("method:", Term.method)] where lower.hasPrefix(prefix) {
                return make(String(lower.dropFirst(prefix.count)))
            }
            return .text(Array(lower.utf8))
        }
    }

    public var isEmpty: Bool { terms.isEmpty }

    public func matches(_ row: OperationRow) -> Bool {
        var text = row.searchText
        return text.withUTF8 { text in
            Self.containsAll(textWords, in: text) && withUnsafePointer(to: row) { matchesOthers($0) }
        }
    }

    /// The words matched against the search text, lower-cased.
    var textWords: [[UInt8]] { terms.compactMap { if case .text(let word) = $0 { word } else { nil } } }

    /// Whether every row this filter's words match is also matched by `other`'s words: each
    /// of `other`'s words is inside one of this filter's (typing more of a word narrows).
    func textNarrows(_ other: RowFilter) -> Bool {
        let mine = textWords
        return other.textWords.allSatisfy { word in mine.contains { Self.contains($0, word) } }
    }

    /// Whether it has words matched against a row's search text (which changes only when a
    /// row is made or its request is built), as opposed to its state, status and method.
    var hasText: Bool { terms.contains { if case .text = $0 { true } else { false } } }

    /// Whether it has state, status or method words.
    var hasOthers: Bool { terms.contains { if case .text = $0 { false } else { true } } }

    /// The state, status and method words, read through the pointer: a row is never copied
    /// whole (at 100,000 rows the copies cost more than the matching).
    func matchesOthers(_ row: UnsafePointer<OperationRow>) -> Bool {
        for term in terms {
            let matched = switch term {
            case .text: true
            case .state(let states):
                states & 1 << row.pointee.state.rank != 0
            case .status(let pattern):
                Self.status(row.pointee.status, matches: pattern)
            case .method(let method):
                row.pointee.method.lowercased() == method
            }
            if !matched { return false }
        }
        return true
    }

    /// Whether `text` has every one of `words`.
    static func containsAll(_ words: [[UInt8]], in text: UnsafeBufferPointer<UInt8>) -> Bool {
        words.allSatisfy { word in word.withUnsafeBufferPointer { contains(text, $0) } }
    }

    static func state(_ state: OperationRow.State, matches word: String) -> Bool {
        state.rawValue.hasPrefix(word) || (word == "ok" && state == .succeeded)
    }

    /// Whether `needle` occurs in `haystack`: `memchr` finds each candidate first byte and
    /// `memcmp` checks the rest (both vectorised in the C library; a Swift byte loop was
    /// three times slower).
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        haystack.withUnsafeBufferPointer { haystack in needle.withUnsafeBufferPointer { contains(haystack, $0) } }
    }

    static func contains(_ haystack: UnsafeBufferPointer<UInt8>, _ needle: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let wordBase = needle.baseAddress, !needle.isEmpty else { return true }
        guard let base = haystack.baseAddress, haystack.count >= needle.count else { return false }
        var start = base
        let last = base + (haystack.count - needle.count)
        while start <= last {
            guard let found = memchr(start, Int32(wordBase.pointee), last - start + 1) else { return false }
            let candidate = UnsafePointer(found.assumingMemoryBound(to: UInt8.self))
            if memcmp(candidate, wordBase, needle.count) == 0 { return true }
            start = candidate + 1
        }
        return false
    }

    /// `503`, or `5xx` / `5**` for a class: digit by digit, without making strings.
    static func status(_ status: Int?, matches pattern: String) -> Bool {
        guard let status else { return pattern == "none" || pattern == "-" }
        let wanted = pattern.utf8
        guard status >= 0, wanted.count == (status < 10 ? 1 : status < 100 ? 2 : status < 1000 ? 3 : String(status).count) else { return false }
        var divisor = 1
        for _ in 1..<wanted.count { divisor *= 10 }
        for character in wanted {
            let digit = UInt8(ascii: "0") + UInt8((status / divisor) % 10)
            if character != UInt8(ascii: "x") && character != UInt8(ascii: "*") && character != digit { return false }
            divisor /= 10
        }
        return true
    }
}

/// The rows the table shows, filtered and sorted, as indices into the model's rows.
public enum VisibleRows {
    public static func compute(_ model: QueueModel, filter: String, sort: MonitorState.Sort, now: TimeInterval) -> [Int] {
        let rowFilter = RowFilter(filter)
        guard !rowFilter.isEmpty else { return sorted(Array(model.rows.indices), model, sort: sort, now: now) }
        // Rows are looked at in place (through the buffer), never copied whole; their texts in
        // the model's one buffer of them.
        let indices = model.rows.withUnsafeBufferPointer { rows -> [Int] in
            model.searchText.matcher(rowFilter.textWords) { hasWords -> [Int] in
                guard let base = rows.baseAddress else { return [] }
                return rows.indices.filter { hasWords($0) && rowFilter.matchesOthers(base + $0) }
            }
        }
        return sorted(indices, model, sort: sort, now: now)
    }

    /// `indices` in the order `sort` says.
    static func sorted(_ indices: [Int], _ model: QueueModel, sort: MonitorState.Sort, now: TimeInterval) -> [Int] {
        var indices = indices
        switch sort {
        case .arrival:
            break
        case .state:
            // Few states, many rows: a stable bucket sort (rows come in arrival order and keep
            // it within a state) looks at each row once; a comparison sort looked twice per
            // comparison (6.4 ms at 100,000 rows).
            indices = model.rows.withUnsafeBufferPointer { rows in
                bucketed(indices, keys: indices.map { rows[$0].state.rank }, buckets: OperationRow.State.allCases.count)
            }
        case .duration:
            let elapsed = model.rows.withUnsafeBufferPointer { rows in indices.map { -rows[$0].elapsed(at: now) } }
            let positions = Array(indices.indices).sorted { (elapsed[$0], indices[$0]) < (elapsed[$1], indices[$1]) }
            indices = positions.map { indices[$0] }
        case .host:
            // Hosts are few: each row's host is looked up once (the last one remembered, as rows
            // of one host tend to come together), then the hosts are put in order (16.4 ms with
            // a comparison sort of the strings at 100,000 rows).
            var hostNumbers: [String: Int] = [:]
            var hosts: [String] = []
            var last = (host: "", number: -1)
            let numbers = model.rows.withUnsafeBufferPointer { rows in indices.map { index -> Int in
                let host = rows[index].host
                if last.number >= 0, host == last.host { return last.number }
                // Comparing with a few known hosts is cheaper than hashing the string.
                let known = hosts.count <= 16 ? hosts.firstIndex(of: host) : hostNumbers[host]
                let number = known ?? {
                    hosts.append(host)
                    hostNumbers[host] = hosts.count - 1
                    return hosts.count - 1
                }()
                last = (host, number)
                return number
            } }
            var rank = [Int](repeating: 0, count: hosts.count)
            for (position, number) in hosts.indices.sorted(by: { hosts[$0] < hosts[$1] }).enumerated() { rank[number] = position }
            indices = bucketed(indices, keys: numbers.map { rank[$0] }, buckets: hosts.count)
        }
        return indices
    }

    /// `indices` grouped by their `keys` (0..<buckets, one per index), each group in its
    /// original order.
    private static func bucketed(_ indices: [Int], keys: [Int], buckets: Int) -> [Int] {
        var starts = [Int](repeating: 0, count: buckets + 1)
        for key in keys { starts[key + 1] += 1 }
        for key in 0..<buckets { starts[key + 1] += starts[key] }
        var sorted = [Int](repeating: 0, count: indices.count)
        for (index, key) in zip(indices, keys) {
            sorted[starts[key]] = index
            starts[key] += 1
        }
        return sorted
    }
}

extension OperationRow.State {
    /// Its place in ``allCases``, the order the state sort shows.
    var rank: Int {
        switch self {
        case .queued: 0
        case .preparing: 1
        case .running: 2
        case .backoff: 3
        case .held: 4
        case .succeeded: 5
        case .failed: 6
        case .cancelled: 7
        }
    }
}
