import Foundation

/// The operation's deadline (``RequestOptions/deadline``): its timer made outside the lock and
/// held by the machine (AttemptStateMachine+Deadline.swift), paused at a breakpoint.
extension RequestOperation {
    /// Starts the deadline's timer: `left` seconds from now.
    func startDeadline(_ deadline: TimeInterval, left: TimeInterval) {
        let clock = environment.clock
        // Held strongly: the operation cancels it when it ends (see `start`).
        let timer = clock.schedule(at: clock.now() + left) { [self] in
            end(outcome: .failure, error: .deadlineExceeded(deadline),
                reason: "deadline of \(DurationText.format(deadline)) exceeded", cancelledBy: nil)
        }
        if !transition(DeadlineStarted(timer: timer, at: clock.now() + left)) { timer.cancel() }
    }

    /// The deadline's timer, due `at`: kept unless the operation ended (false).
    struct DeadlineStarted: OperationTransition {
        let timer: ScheduledTimer
        let at: TimeInterval

        func apply(to state: inout State, of operation: RequestOperation) -> Bool {
            state.machine.deadlineStarted(timer, at: at)
        }
    }

    /// Stops the deadline's clock while the operation is stopped at a breakpoint, keeping
    /// what is left of it. Called under the lock; returns the timer to cancel outside it.
    func pauseDeadline(_ state: inout State) -> ScheduledTimer? {
        state.machine.pauseDeadline(at: environment.now())
    }

    /// Starts it again with what was left, once the breakpoint lets the operation go.
    func resumeDeadline() {
        guard let deadline = options.deadline,
              let left = look({ $0.machine.deadlineLeft }) else { return }
        startDeadline(deadline, left: left)
    }
}
