import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestEventFormat
import RequestOperations
import Synchronization

/// The monitor's commands carried out on a live ``RequestQueue`` through ``QueueControl``,
/// answered in the same words the monitor endpoint uses.
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

    public func perform(_ command: MonitorCommand) -> CommandAnswer {
        let answer: QueueControl.Answer
        switch command {
        case .retry(let id):
            guard let operation = operation(id) else { return Self.answer(.unknownOperation(id)) }
            answer = control.retry(operation)
            if let again = answer.added {
                track(again)
                onAdd?(again)
            }
        case .cancel(let id):
            guard let operation = operation(id) else { return Self.answer(.unknownOperation(id)) }
            answer = control.cancel(operation)
        case .cancelAll:
            answer = control.cancelAll(operations.withLock { Array($0.values) })
        case .setSuspended(let suspended):
            answer = control.setSuspended(suspended)
        case .releaseBatches:
            answer = control.releaseBatches()
        case .playback:
            return Self.noPlayback
        }
        return Self.answer(answer.outcome)
    }

    private static func answer(_ outcome: QueueCommandOutcome) -> CommandAnswer {
        CommandAnswer(ok: outcome.ok, outcome.message)
    }
}
