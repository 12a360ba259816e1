import Foundation

/// The operation's deadline (``RequestOptions/deadline``): one timer from the start, which
/// stands still while a person holds the operation at a breakpoint. Their thinking time is
/// not the upstream's: 15 of 20 requests stopped at a breakpoint used to fail with "deadline
/// of 60s exceeded" while someone read them.
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
            guard state.result == nil else { return false }
            state.deadlineTimer = timer
            state.deadlineAt = at
            state.deadlineLeft = nil
            return true
        }
    }

    /// Stops the deadline's clock while the operation is stopped at a breakpoint, keeping
    /// what is left of it. Called under the lock; returns the timer to cancel outside it.
    func pauseDeadline(_ state: inout State) -> ScheduledTimer? {
        guard let timer = state.deadlineTimer, let at = state.deadlineAt else { return nil }
        state.deadlineLeft = max(0, at - environment.clock.now())
        state.deadlineTimer = nil
        state.deadlineAt = nil
        return timer
    }

    /// Starts it again with what was left, once the breakpoint lets the operation go.
    func resumeDeadline() {
        guard let deadline = options.deadline,
              let left = look({ state -> TimeInterval? in state.result == nil ? state.deadlineLeft : nil }) else { return }
        startDeadline(deadline, left: left)
    }
}
