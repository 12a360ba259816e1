import Foundation

/// Every row's search text — id, host, path and method, lower-cased UTF-8, NUL between them —
/// in one buffer, in the order rows were made or changed, with where each row's text is.
///
/// A filter reads 100,000 rows' texts as one sequential walk through a few MB instead of
/// 100,000 separate arrays scattered through the heap (the cache misses and reference counts
/// were most of a keystroke's 13 ms). A row whose text changes (its request built) gets its
/// new text at the end; the old bytes stay until the rows are next let go, when the buffer
/// is made again from the rows kept.
struct SearchText: Sendable {
    private(set) var bytes: [UInt8] = []
    /// Per row position: where its text starts in ``bytes`` and how long it is.
    private(set) var spans: [Span] = []

    struct Span: Sendable {
        var start: UInt32
        var count: UInt32
    }

    /// Sets the text of the row at `position` (a new row when it is ``spans``'s count).
    mutating func set(_ position: Int, to text: String) {
        if bytes.count > Int(UInt32.max) - 65_536 - text.utf8.count { compact() }
        let span = Span(start: UInt32(bytes.count), count: UInt32(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
        if position == spans.count { spans.append(span) } else { spans[position] = span }
    }

    /// Keeps the texts of the rows at `kept` (in that order, now positions 0, 1, ...).
    mutating func keep(_ kept: [Int]) {
        var fresh = SearchText()
        fresh.bytes.reserveCapacity(kept.reduce(0) { $0 + Int(spans[$1].count) })
        fresh.spans.reserveCapacity(spans.capacity)
        for position in kept {
            let span = spans[position]
            fresh.spans.append(Span(start: UInt32(fresh.bytes.count), count: span.count))
            fresh.bytes.append(contentsOf: bytes[Int(span.start)..<Int(span.start + span.count)])
        }
        self = fresh
    }

    /// Whether the text of the row at `position` holds `needle` (false for a row without one).
    func contains(_ position: Int, _ needle: [UInt8]) -> Bool {
        guard position < spans.count else { return false }
        let span = spans[position]
        return bytes.withUnsafeBufferPointer { text in
            needle.withUnsafeBufferPointer { RowFilter.contains(UnsafeBufferPointer(rebasing: text[Int(span.start)..<Int(span.start + span.count)]), $0) }
        }
    }

    /// Drops the bytes no row points at any more.
    private mutating func compact() {
        keep(Array(spans.indices))
    }

    /// Runs `body` with a test for the row at a position: whether its text has every one of
    /// `words` (all rows pass when there are none). The test reads the buffer in place; it is
    /// valid only inside `body`.
    func matcher<Result>(_ words: [[UInt8]], _ body: (_ hasWords: (Int) -> Bool) -> Result) -> Result {
        // The words one after another in one buffer, so the test holds no arrays.
        let wordBytes = words.flatMap { $0 }
        var wordSpans: [(start: Int, count: Int)] = []
        for word in words { wordSpans.append(((wordSpans.last.map { $0.start + $0.count }) ?? 0, word.count)) }
        return bytes.withUnsafeBufferPointer { text in
            spans.withUnsafeBufferPointer { spans in
                wordBytes.withUnsafeBufferPointer { wordBytes in
                    body { position in
                        let span = spans[position]
                        let row = UnsafeBufferPointer(rebasing: text[Int(span.start)..<Int(span.start) + Int(span.count)])
                        for word in wordSpans
                        where !RowFilter.contains(row, UnsafeBufferPointer(rebasing: wordBytes[word.start..<word.start + word.count])) {
                            return false
                        }
                        return true
                    }
                }
            }
        }
    }
}
