import Foundation
import RequestOperations
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `/` filter: words that must all match. A plain word matches the id, method, host or
/// path (ignoring case); `state:failed`, `status:503`, `status:5xx`, `method:POST` match
/// those fields; `host:api.example.com` and `path:/v1/orders` the host and path alone;
/// `header:x-request-id=abc` a request or response header (`header:retry-after` its name
/// alone); `body:"out of stock"` the request's or the answer's body as recorded;
/// `program:curl` the PROGRAM column (a proxy's client, or a merged view's program), as part
/// of it ignoring case (`program:4242` its pid). `!` before
/// a word asks for rows it does not match; double quotes keep spaces in a word. `host:`,
/// `path:`, `method:` and `header:` mean what they mean to breakpoints, fault rules and the
/// endpoint's commands (``RequestMatch`` reads them all): `host:40139` is the same rows here
/// as the requests a breakpoint `host:40139` stops.
public struct RowFilter: Sendable, Equatable {
    indirect enum Term: Sendable, Equatable {
        /// Lower-cased UTF-8, searched for in each row's ``OperationRow/searchKey``.
        case text([UInt8])
        /// The states the word names (`fail` → failed), worked out once, as a bit per state
        /// (``OperationRow/State/rank``): checking a set hashed the state for every row.
        case state(UInt16)
        case status(String)
        case method(String)
        /// As ``RequestMatch`` reads `host:` and `path:`.
        case host(String)
        case path(String)
        /// `\nname: value` lower-cased, searched for in the row's headers (``QueueModel/headerText``).
        case header([UInt8])
        /// Lower-cased UTF-8, searched for in the row's bodies (``QueueModel/bodyText``).
        case body([UInt8])
        /// Lower-cased, searched for in the row's PROGRAM (``OperationRow/origin``).
        case program(String)
        /// Rows the term does not match.
        case not(Term)
    }

    let terms: [Term]
    /// Words that look like a key this filter does not know (`stauts:5xx`), each said with
    /// the key it was likely meant to be; they are searched for as plain text.
    public let problems: [String]

    /// The keys a filter knows.
    static let keys = ["state", "status", "method", "host", "path", "body", "header", "program"]

    public init(_ text: String) {
        let words = Self.words(text)
        terms = words.map(Self.term)
        problems = words.compactMap(Self.problem)
    }

    private static func problem(_ word: String) -> String? {
        let word = word.hasPrefix("!") ? String(word.dropFirst()) : word
        guard let colon = word.firstIndex(of: ":"), colon > word.startIndex, word[..<colon].allSatisfy(\.isLetter) else { return nil }
        let key = word[..<colon].lowercased()
        guard !keys.contains(key), key != "http", key != "https" else { return nil }
        let guess = RequestMatch.suggestion(for: key, among: keys).map { " (did you mean \"\($0):\"?)" } ?? ""
        return "\"\(key):\" is not a filter key\(guess); searched for as text. Keys: \(keys.map { $0 + ":" }.joined(separator: " "))"
    }

    /// The words of a filter: split at spaces, except inside double quotes (which go).
    static func words(_ text: String) -> [String] {
        var words: [String] = [], current = "", quoted = false
        for character in text {
            if character == "\"" {
                quoted.toggle()
            } else if character == " ", !quoted {
                if !current.isEmpty { words.append(current) }
                current = ""
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    private static func term(_ word: String) -> Term {
        if word.count > 1, word.hasPrefix("!") { return .not(term(String(word.dropFirst()))) }
        let lower = word.lowercased()
        func value(_ prefix: String) -> String? { lower.hasPrefix(prefix) ? String(lower.dropFirst(prefix.count)) : nil }
        if let word = value("state:") {
            return .state(OperationRow.State.allCases.filter { Self.state($0, matches: word) }.reduce(0) { $0 | 1 << $1.rank })
        }
        if let status = value("status:") { return .status(status) }
        if let method = value("method:") { return .method(method) }
        if let host = value("host:") { return .host(host) }
        if let path = value("path:") { return .path(path) }
        if let body = value("body:") { return .body(Array(body.utf8)) }
        if let program = value("program:") { return .program(program) }
        if let header = value("header:") {
            // `name=value`: the value's start; `name` alone: any value.
            let parts = header.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return .header(Array(("\n" + parts[0] + (parts.count == 2 ? ": " + parts[1] : ":")).utf8))
        }
        return .text(Array(lower.utf8))
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

    /// Whether it has words other than plain text ones (matched through the search text).
    var hasOthers: Bool { terms.contains { if case .text = $0 { false } else { true } } }

    /// The words other than plain text ones, read through the pointer: a row is never copied
    /// whole (at 100,000 rows the copies cost more than the matching). `content` reads the
    /// row's headers and bodies in the model's buffers (nil: no row matches such a word).
    func matchesOthers(_ row: UnsafePointer<OperationRow>, position: Int = 0, content: QueueModel.Content? = nil) -> Bool {
        terms.allSatisfy { term in
            if case .text = term { return true }
            return Self.matches(term, row, position: position, content: content)
        }
    }

    private static func matches(_ term: Term, _ row: UnsafePointer<OperationRow>, position: Int, content: QueueModel.Content?) -> Bool {
        switch term {
        case .text(let word):
            var text = row.pointee.searchText
            return text.withUTF8 { text in word.withUnsafeBufferPointer { contains(text, $0) } }
        case .state(let states):
            return states & 1 << row.pointee.state.rank != 0
        case .status(let pattern):
            return status(row.pointee.status, matches: pattern)
        case .method(let method):
            return row.pointee.method.lowercased() == method
        case .program(let text):
            guard let origin = row.pointee.origin else { return false }
            return text.isEmpty || origin.lowercased().contains(text)
        case .host(let text):
            let host = row.pointee.host
            // `name:port` as the row keeps it; the port is the URL's own when it gave one.
            var name = Substring(host), port: Int?
            if let colon = host.lastIndex(of: ":"), let number = Int(host[host.index(after: colon)...]) { (name, port) = (host[..<colon], number) }
            return RequestMatch.host(text, matches: String(name), port: port, scheme: row.pointee.url.hasPrefix("https:") ? "https" : "http")
        case .path(let text):
            let path = row.pointee.path
            return RequestMatch.path(text, matches: path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        case .header(let word):
            // Finished rows from the model's buffer; the few still running in place.
            guard row.pointee.state.isFinished else { return contains(Array(QueueModel.Content.headers(of: row.pointee).utf8), word) }
            return content?.headers.contains(position, word) ?? false
        case .body(let word):
            guard row.pointee.state.isFinished else { return contains(Array(QueueModel.Content.bodies(of: row.pointee).utf8), word) }
            return content?.bodies.contains(position, word) ?? false
        case .not(let inner):
            return !matches(inner, row, position: position, content: content)
        }
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
                let content = model.content
                return rows.indices.filter { hasWords($0) && rowFilter.matchesOthers(base + $0, position: $0, content: content) }
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
        case .relayed: 8
        }
    }
}
