import Foundation
import Synchronization

/// A large HAR decoded on every core: `JSONDecoder` was three quarters of the time a 100 MB
/// HAR took to load, on one core. The entries are found by ``HAREntriesLocator`` and decoded
/// in slices, one slice per core; the rest of the file is decoded on its own, with
/// the entries array left empty, so every byte is still checked by `JSONDecoder`.
///
/// Gives exactly what decoding the file whole gives, or nil when it cannot (a shape the
/// locator does not take, bytes that are not JSON): the caller then decodes the file whole,
/// which names what is wrong as before.
enum HARSplitDecoder {
    /// Files below this are decoded whole: a few megabytes take milliseconds.
    static let threshold = 8 << 20

    /// - Parameter found: where the locator found the entries.
    static func decodeEntries(_ bytes: Data, found: HAREntriesLocator.Found, slices: Int) -> [Readable<HAREntry>]? {
        // The rest of the file, the entries left out: it must be a HAR on its own.
        let start = bytes.startIndex
        var rest = Data(bytes[start..<start + found.array.lowerBound])
        rest.append(contentsOf: "[]".utf8)
        rest.append(bytes[(start + found.array.upperBound)...])
        guard (try? JSONDecoder().decode(HARFile.self, from: rest)) != nil else { return nil }

        let elements = found.elements
        let ranges = sliceRanges(elements.count, slices: slices)
        let decoded = map(ranges, slices: ranges.count) { _, range -> [Readable<HAREntry>]? in
            // The slice's entries as one array, `[` … `]` around the bytes from its first
            // entry to its last (one decoder call per slice: one per entry cost 60 % more).
            var array = Data([UInt8(ascii: "[")])
            array.append(bytes[(start + elements[range.lowerBound].lowerBound)..<(start + elements[range.upperBound - 1].upperBound)])
            array.append(UInt8(ascii: "]"))
            // Not JSON inside an entry: nil, and the whole-file decoder says where.
            guard let entries = try? JSONDecoder().decode([Readable<HAREntry>].self, from: array), entries.count == range.count else { return nil }
            return zip(range, entries).map { index, entry in entry.placed(at: index) }
        }
        var all: [Readable<HAREntry>] = []
        all.reserveCapacity(elements.count)
        for slice in decoded {
            guard let slice else { return nil }
            all += slice
        }
        return all
    }
}

extension HARSplitDecoder {
    /// `transform` of every element, in order, a slice of them per thread (one slice: on
    /// this thread). The elements are only read; each result is made on one thread.
    static func map<Element: Sendable, Transformed: Sendable>(_ items: [Element], slices: Int,
                                                              _ transform: @Sendable (Int, Element) -> Transformed) -> [Transformed] {
        guard slices > 1, items.count > 1 else { return items.enumerated().map(transform) }
        let ranges = sliceRanges(items.count, slices: slices)
        let results = Mutex<[Int: [Transformed]]>([:])
        DispatchQueue.concurrentPerform(iterations: ranges.count) { slice in
            let done = ranges[slice].map { transform($0, items[$0]) }
            results.withLock { $0[slice] = done }
        }
        return results.withLock { done in ranges.indices.flatMap { done[$0] ?? [] } }
    }

    /// `0..<count` cut into at most `slices` consecutive, non-empty ranges of equal size (the
    /// last one shorter).
    static func sliceRanges(_ count: Int, slices: Int) -> [Range<Int>] {
        let parts = min(max(1, slices), max(1, count))
        let perSlice = (count + parts - 1) / parts
        return (0..<parts).map { min(count, $0 * perSlice)..<min(count, ($0 + 1) * perSlice) }.filter { !$0.isEmpty }
    }
}

extension Readable where Element == HAREntry {
    /// With its error's path as decoding the whole file gives it: `$.log.entries[index]...`
    /// (decoded in a slice, the path starts at the slice's own index).
    func placed(at index: Int) -> Readable {
        guard case .unreadable(let error, let found) = self else { return self }
        func place(_ context: DecodingError.Context) -> DecodingError.Context {
            DecodingError.Context(codingPath: [PathKey("log"), PathKey("entries"), PathKey(index: index)] + context.codingPath.dropFirst(),
                                  debugDescription: context.debugDescription, underlyingError: context.underlyingError)
        }
        switch error {
        case .typeMismatch(let type, let context): return .unreadable(.typeMismatch(type, place(context)), found: found)
        case .valueNotFound(let type, let context): return .unreadable(.valueNotFound(type, place(context)), found: found)
        case .keyNotFound(let key, let context): return .unreadable(.keyNotFound(key, place(context)), found: found)
        case .dataCorrupted(let context): return .unreadable(.dataCorrupted(place(context)), found: found)
        @unknown default: return self
        }
    }
}

private struct PathKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(_ name: String) {
        stringValue = name
        intValue = nil
    }

    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }

    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
}
