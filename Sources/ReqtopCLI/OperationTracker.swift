import Foundation
import RequestOperations
import Synchronization

/// The operations a session added, in order, and the summary they end with. Shared by the
/// headless and the monitor sessions.
final class OperationTracker: Sendable {
    private let operations = Mutex<[RequestOperation]>([])
    private let start = Date()

    func track(_ operation: RequestOperation) {
        operations.withLock { $0.append(operation) }
    }

    var all: [RequestOperation] { operations.withLock { $0 } }

    /// Cancels every operation still running.
    func cancelRunning(by who: String) {
        for operation in all where operation.result == nil {
            operation.cancel(by: who)
        }
    }

    /// The summary once every operation has ended.
    var summary: RunSummary {
        RunSummary(results: all.compactMap(\.result), duration: Date().timeIntervalSince(start))
    }
}
