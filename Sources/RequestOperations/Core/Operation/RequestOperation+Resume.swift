import Foundation

/// A task's resume and a cancel that races it. The engine never asks a transport to cancel a
/// task whose resume has not returned (a transport may call back from inside `resume`): a
/// cancel decided meanwhile is noted on the task's race (`State.resuming`) and carried out by
/// the resumer.
extension RequestOperation {
    /// A task being resumed, and whether a cancel came while it was.
    enum ResumeRace {
        case resuming
        case cancelled
    }

    /// Resumes `task` on the transport, outside the lock (a transport may call back from
    /// inside `resume`), then hands the attempt its timers (`timers` makes them) and carries
    /// out a cancel that came while it was being resumed.
    func resumeOutsideLock(_ task: TransportTask, timers: (() -> (AttemptTimers, AttemptID))? = nil) {
        assertOutsideTransition()
        environment.transport.resume(task)
        let (cancelled, unused) = transition(Resumed(task: task.identifier, timers: timers?()))
        unused.timers.forEach { $0.cancel() }
        if cancelled { environment.transport.cancel(task) }
    }

    /// The transport's resume of `task` returned: the attempt takes its timers, and a cancel
    /// decided meanwhile is said (true: cancel it now).
    struct Resumed: OperationTransition {
        let task: Int
        let timers: (AttemptTimers, AttemptID)?

        func apply(to state: inout State, of operation: RequestOperation) -> (cancel: Bool, unused: Teardown) {
            let race = state.resuming.removeValue(forKey: task)
            let unused = timers.map { state.machine.timersStarted($0.0, of: $0.1).1 } ?? Teardown()
            return (race == .cancelled, unused)
        }
    }

    /// Cancels `tasks` on the transport, outside the lock; one whose resume has not returned
    /// yet is cancelled by its resumer instead, right after.
    func cancelTasks(_ tasks: [TransportTask]) {
        guard !tasks.isEmpty else { return }
        assertOutsideTransition()
        transition(CancelWhenResumed(tasks: tasks)).forEach(environment.transport.cancel)
    }

    /// Of `tasks`, those to cancel now; one whose resume has not returned is left to its
    /// resumer (``Resumed``).
    struct CancelWhenResumed: OperationTransition {
        let tasks: [TransportTask]

        func apply(to state: inout State, of operation: RequestOperation) -> [TransportTask] {
            guard !state.resuming.isEmpty else { return tasks }
            return tasks.filter { task in
                guard state.resuming[task.identifier] != nil else { return true }
                state.resuming[task.identifier] = .cancelled
                return false
            }
        }
    }
}
