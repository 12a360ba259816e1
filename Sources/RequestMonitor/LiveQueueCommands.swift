import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations
import Synchronization

/// The monitor's commands carried out on a live ``RequestQueue``.
public final class LiveQueueCommands: QueueCommands {
    private let queue: RequestQueue
    private let control: QueueControl
    private let operations = Mutex<[String: RequestOperation]>([:])
    /// Told of every operation this adapter adds (a re-run), so callers can track it too.
    private let onAdd: (@Sendable (RequestOperation) -> Void)?

    public init(queue: RequestQueue, onAdd: (@Sendable (RequestOperation) -> Void)? = nil) {
        self.queue = queue
        self.control = QueueControl(queue: queue)
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
        let answer = control.retry(operation)
        if let again = answer.added {
            track(again)
            onAdd?(again)
        }
        return answer.message
    }

    public func cancel(_ id: String) -> String {
        guard let operation = operation(id) else { return "\(id) is not an operation of this queue" }
        return control.cancel(operation).message
    }

    public func cancelAll() -> String {
        control.cancelAll(operations.withLock { Array($0.values) }).message
    }

    public func releaseBatches() -> String {
        control.releaseBatches().message
    }

    public func setSuspended(_ suspended: Bool) -> String {
        control.setSuspended(suspended).message
    }
}
