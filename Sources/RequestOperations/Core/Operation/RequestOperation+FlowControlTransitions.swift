import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transitions of the flow-control stages (RequestOperation+FlowControl.swift performs
/// what they answer): admission, batches, reactors, requeues, and a failure from any of them.
extension RequestOperation {
    /// The interceptors made `request` for attempt `id`: it asks for a slot (false: it ended
    /// or waits for something else meanwhile).
    struct Admitted: OperationTransition {
        let request: RequestMessage?
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Bool {
            guard state.machine.intercepted(of: id) else { return false }
            state.outgoing = request
            return true
        }
    }

    /// `event`, if attempt `id` is still under way (false: it is not).
    struct AnnouncedIfUnderWay: OperationTransition {
        let event: RequestEvent.Payload
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Bool {
            guard state.machine.isUnderWay(id) else { return false }
            operation.publish(&state, event)
            return true
        }
    }

    /// An interceptor holds attempt `id` in `batch`.
    struct HeldInBatch: OperationTransition {
        let batch: String
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Bool {
            switch state.machine.hold(batch: batch, of: id) {
            case .announce: operation.publish(&state, .held(batch: batch))
            case .stay, .refuse: return false
            }
            return true
        }
    }

    /// `batch` let attempt `id` go, with `size` others.
    struct ReleasedFromBatch: OperationTransition {
        let batch: String
        let size: Int
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Bool {
            switch state.machine.released(of: id) {
            case .announce: operation.publish(&state, .released(batch: batch, size: size))
            case .stay, .refuse: return false
            }
            return true
        }
    }

    /// Attempt `id` waits for reactor `name`'s run (false: it ended meanwhile).
    struct WaitsForReactor: OperationTransition {
        let name: String
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Bool {
            switch state.machine.waitForReactor(name, of: id) {
            case .announce: operation.publish(&state, .reactorWaiting(name: name))
            case .stay: break
            case .refuse: return false
            }
            return true
        }
    }

    /// Reactor `name`'s run ended (`error`: how it failed), said if attempt `id` is still
    /// under way (false: it is not).
    struct ReactorRunEnded: OperationTransition {
        let name: String
        let error: RequestError.Reason?
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Bool {
            guard state.machine.isUnderWay(id) else { return false }
            operation.publish(&state, .reactorFinished(name: name, outcome: error.map { .failure("\($0)") } ?? .success))
            if error == nil {
                switch state.machine.reactorFinished(of: id) {
                case .announce, .stay, .refuse: break
                }
            }
            return true
        }
    }

    /// The operation fails with `error` if `id` is still the attempt under way and `applies`
    /// says the machine is where the failure belongs.
    struct Failed: OperationTransition {
        let error: RequestError.Reason
        let reason: String
        let applies: @Sendable (AttemptStateMachine) -> Bool
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Teardown? {
            guard state.machine.isUnderWay(id), applies(state.machine) else { return nil }
            return operation.endLocked(&state, outcome: .failure, error: error, reason: reason, cancelledBy: nil)
        }
    }

    /// A reactor acts on attempt `id`'s answer: the attempt is closed and its slot goes back
    /// while the reactor works.
    struct ReactorTakesOver: OperationTransition {
        let name: String
        let end: AttemptEnd
        let at: TimeInterval
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Teardown? {
            guard state.machine.deciding(of: id) != nil else { return nil }
            var released = Teardown()
            released.tasks = operation.closeRecord(&state, failure: end.failure, at: at)
            guard let slot = state.machine.react(name, of: id) else { return nil }
            released.merge(slot)
            return released
        }
    }

    /// A reactor requeues attempt `id`: the next begins at once (`closing`: the attempt that
    /// ended is closed first). Its racers' tasks are handed back to cancel.
    struct Requeued: OperationTransition {
        let reactor: String
        let reason: String
        let reintercept: Bool
        let closing: AttemptEnd?
        let needsAdmission: Bool
        let at: TimeInterval
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> (AttemptStateMachine.Entry, [TransportTask]) {
            let number = state.leadAttempt
            var racers: [TransportTask] = []
            if let closing, state.machine.deciding(of: id) != nil { racers = operation.closeRecord(&state, failure: closing.failure, at: at) }
            let entry = state.machine.requeue(needsAdmission: needsAdmission, of: id)
            switch entry {
            case .refuse: break
            case .admit, .askForSlot:
                operation.publish(&state, .requeued(by: reactor, reason: reason), attempt: number)
                operation.recordBegun(&state, reintercept: reintercept)
            }
            return (entry, racers)
        }
    }
}
