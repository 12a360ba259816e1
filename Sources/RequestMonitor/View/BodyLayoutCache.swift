import Foundation
import RequestOperations
import Synchronization

/// The Body tab's lines, laid out once per body and kept while it is shown: laying out a
/// 10 MB one-line JSON answer (pretty-printing, checking it) on every frame froze the
/// monitor for 8–20 s a keystroke. One entry: the detail view shows one row at a time.
final class BodyLayoutCache: Sendable {
    static let shared = BodyLayoutCache()

    /// What the lines depend on: the row, which bodies it holds (by attempt and size), and
    /// the colours.
    struct Key: Hashable, Sendable {
        var id: String
        var status: Int?
        var request: Int?
        var requestType: String?
        var response: ResponseKey?
        var color: Bool

        struct ResponseKey: Hashable, Sendable {
            var attempt: Int
            var total: Int
            var held: Int?
            var truncated: Bool
            var mediaType: String?
        }

        init(_ row: OperationRow, color: Bool) {
            id = row.id
            status = row.status
            if case .bytes(let data)? = row.requestBody { request = data.count }
            requestType = row.requestHeaders.first { $0.key.lowercased() == "content-type" }?.value
            response = row.responseBody.map { answer in
                var held: Int?
                if case .bytes(let data) = answer.body { held = data.count }
                return ResponseKey(attempt: answer.attempt, total: answer.totalBytes, held: held, truncated: answer.truncated, mediaType: answer.mediaType)
            }
            self.color = color
        }
    }

    typealias Lines = [[(String, CellGrid.Style)]]

    private let entry = Mutex<(key: Key, lines: Lines)?>(nil)

    /// The lines for `key`, made by `make` only when they are not the ones kept.
    func lines(for key: Key, make: () -> Lines) -> Lines {
        if let kept = entry.withLock({ $0?.key == key ? $0?.lines : nil }) { return kept }
        let made = make()
        entry.withLock { $0 = (key, made) }
        return made
    }
}
