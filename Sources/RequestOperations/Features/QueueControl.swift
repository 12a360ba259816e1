import Foundation

/// What a person can tell a queue from a monitor, answered in words a person reads. Shared
/// by the live monitor and the monitor endpoint, so the two behave and speak alike; each
/// finds the operations itself (what it cannot find, it answers for itself).
public struct QueueControl: Sendable {
    public struct Answer: Sendable {
        /// False when nothing was done (the message says why).
        public var ok: Bool
        public var message: String
        /// An operation the command added to the queue (a re-run).
        public var added: RequestOperation?
    }

    public let queue: RequestQueue

    public init(queue: RequestQueue) {
        self.queue = queue
    }

    /// Skips a backoff, or runs a finished operation again (as `id~2`).
    public func retry(_ operation: RequestOperation) -> Answer {
        if operation.retryNow() { return Answer(ok: true, message: "retrying \(operation.id) now") }
        guard operation.result != nil else { return Answer(ok: false, message: "\(operation.id) is not waiting to retry") }
        let again = queue.runAgain(operation)
        return Answer(ok: true, message: "running \(operation.id) again as \(again.id)", added: again)
    }

    public func cancel(_ operation: RequestOperation) -> Answer {
        guard operation.result == nil else { return Answer(ok: false, message: "\(operation.id) has already ended") }
        operation.cancel(by: "monitor")
        return Answer(ok: true, message: "cancelled \(operation.id)")
    }

    /// Cancels those of `operations` still running.
    public func cancelAll(_ operations: [RequestOperation]) -> Answer {
        let running = operations.filter { $0.result == nil }
        running.forEach { $0.cancel(by: "monitor") }
        return Answer(ok: true, message: "cancelled \(running.count) operation\(running.count == 1 ? "" : "s")")
    }

    public func setSuspended(_ suspended: Bool) -> Answer {
        queue.isSuspended = suspended
        return Answer(ok: true, message: suspended ? "paused: no new attempt starts" : "resumed")
    }

    public func releaseBatches() -> Answer {
        Answer(ok: true, message: queue.releaseHeldBatches())
    }
}
