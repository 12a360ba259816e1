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
    private let control: QueueControl
    /// Told of every operation this adapter adds (a re-run), so callers can track it too.
    private let onAdd: (@Sendable (RequestOperation) -> Void)?

    public init(queue: RequestQueue, onAdd: (@Sendable (RequestOperation) -> Void)? = nil) {
        self.control = QueueControl(queue: queue)
        self.onAdd = onAdd
    }

    public func perform(_ command: MonitorCommand) -> CommandAnswer {
        guard case .queue(let command) = command else { return Self.noPlayback }
        let answer = control.perform(command)
        if let added = answer.added { onAdd?(added) }
        return CommandAnswer(ok: answer.ok, answer.outcome.message)
    }
}
