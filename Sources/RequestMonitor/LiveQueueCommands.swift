import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations
import Synchronization

/// The monitor's commands carried out on a live ``RequestQueue``.
public final class LiveQueueCommands: QueueCommands {
    private let queue: RequestQueue
    private let operations = Mutex<[String: RequestOperation]>([:])
    /// Told of every operation this adapter adds (a re-run), so callers can track it too.
    private let onAdd: (@Sendable (RequestOperation) -> Void)?

    public init(queue: RequestQueue, onAdd: (@Sendable (RequestOperation) -> Void)? = nil) {
        self.queue = queue
        self.onAdd = onAdd
    }

    /// Makes an operation reachable by id.
    public func track(_ operation: RequestOperation) {
        operations.withLock { $0[operation.id] = operation }
    }

    private func operation(_ id: String) -> RequestOperation? {
        operations.withLock { $0[id] }
    }

    public func retry(_ id: String) -> String {
        guard let operation = operation(id) else { return "\(id) is not an operation of this queue" }
        if operation.retryNow() { return "retrying \(id) now" }
        guard operation.result != nil else { return "\(id) is not waiting to retry" }
        let again = queue.runAgain(operation)
        track(again)
        onAdd?(again)
        return "running \(id) again as \(again.id)"
    }

    public func cancel(_ id: String) -> String {
        guard let operation = operation(id) else { return "\(id) is not an operation of this queue" }
        guard operation.result == nil else { return "\(id) has already ended" }
        operation.cancel(by: "monitor")
        return "cancelled \(id)"
    }

    public func cancelAll() -> String {
        let live = operations.withLock { $0.values.filter { $0.result == nil } }
        live.forEach { $0.cancel(by: "monitor") }
        return "cancelled \(live.count) operation\(live.count == 1 ? "" : "s")"
    }

    public func releaseBatches() -> String {
        queue.releaseHeldBatches()
    }

    public func setSuspended(_ suspended: Bool) -> String {
        queue.isSuspended = suspended
        return suspended ? "paused: no new attempt starts" : "resumed"
    }
}
