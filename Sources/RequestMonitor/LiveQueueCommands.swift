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
    /// Told of every operation this adapter adds (a re-run), so callers can track it too.
    private let onAdd: (@Sendable (RequestOperation) -> Void)?

    public init(queue: RequestQueue, onAdd: (@Sendable (RequestOperation) -> Void)? = nil) {
        self.queue = queue
        self.control = QueueControl(queue: queue)
        self.onAdd = onAdd
    }

    /// The queue's own memory of operations by id (running, or among its recent ones). A map
    /// of its own here kept every operation the monitor ever saw, each with its body: the
    /// soaked demo grew ~35 KB an operation, 1 MB a wave for its download.
    private func operation(_ id: String) -> RequestOperation? {
        queue.operation(withID: id)
    }

    public func perform(_ command: MonitorCommand) -> CommandAnswer {
        let answer: QueueControl.Answer
        switch command {
        case .retry(let id):
            guard let operation = operation(id) else { return Self.answer(.unknownOperation(id)) }
            answer = control.retry(operation)
            if let again = answer.added {
                onAdd?(again)
            }
        case .cancel(let id):
            guard let operation = operation(id) else { return Self.answer(.unknownOperation(id)) }
            answer = control.cancel(operation)
        case .cancelAll:
            answer = control.cancelAll(queue.operations)
        case .setSuspended(let suspended):
            answer = control.setSuspended(suspended)
        case .releaseBatches:
            answer = control.releaseBatches()
        case .isolateHost(let host):
            answer = control.isolate(host: host)
        case .closeCircuit(let host):
            answer = control.closeCircuit(host: host)
        case .resend(let id, let entry):
            guard let operation = operation(id) else { return Self.answer(.unknownOperation(id)) }
            answer = control.resend(operation, edited: entry.urlRequest, attemptTimeout: entry.timeout, deadline: entry.deadline)
            if let edited = answer.added { onAdd?(edited) }
        case .toggleFault(let host):
            answer = control.toggleFault(host: host)
        case .clearFaults:
            answer = control.clearFaults()
        case .playback:
            return Self.noPlayback
        }
        return Self.answer(answer.outcome)
    }

    private static func answer(_ outcome: QueueCommandOutcome) -> CommandAnswer {
        CommandAnswer(ok: outcome.ok, outcome.message)
    }
}
