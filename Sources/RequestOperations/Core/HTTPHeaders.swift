import Foundation

extension Dictionary where Key == String, Value == String {
    /// The value of header `name`, compared without regard to case (`content-type` finds
    /// `Content-Type`): the one lookup the engine, the redactor and the archive share.
    ///
    /// Field names are ASCII tokens (RFC 9110 §5.1), so ASCII letters are folded and nothing
    /// else: Foundation's `caseInsensitiveCompare` folded all of Unicode, and was 3–4 % of the
    /// CPU of a small GET on NIO (every answer is asked for its length and its coding).
    public func value(forHTTPHeader name: String) -> String? {
        if let exact = self[name] { return exact }
        // By index (no copy of each pair; `same` turns names of another length away at once):
        // asked of every answer for fields it mostly lacks (`Content-Encoding`), #58.
        var index = startIndex
        while index != endIndex {
            if HTTPFieldName.same(self[index].key, name) { return self[index].value }
            formIndex(after: &index)
        }
        return nil
    }

    /// The content coding the body came in (`Content-Encoding`: `gzip`, `br`, …); nil when
    /// the header is absent, empty or `identity` — the body's bytes are then its own. The one
    /// reading the engine's limits, its length check and the monitor's progress share.
    public var contentCoding: String? {
        guard let coding = value(forHTTPHeader: "Content-Encoding"), !coding.isEmpty,
              !HTTPFieldName.same(coding, "identity") else { return nil }
        return coding
    }
}

/// HTTP field names compared as RFC 9110 compares them: ASCII letters without regard to case.
enum HTTPFieldName {
    static func same(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        // Two iterators, not `zip(…).allSatisfy`, which was not specialised away (#58).
        var left = a.utf8.makeIterator(), right = b.utf8.makeIterator()
        while let x = left.next(), let y = right.next() {
            if x != y, lower(x) != lower(y) { return false }
        }
        return true
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }
}
