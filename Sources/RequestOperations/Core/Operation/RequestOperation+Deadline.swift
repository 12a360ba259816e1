import Foundation

/// The operation's deadline (``RequestOptions/deadline``): one timer from the start, which
/// stands still while a person holds the operation at a breakpoint. Their thinking time is
/// not the upstream's: 15 of 20 requests stopped at a breakpoint used to fail with "deadline
/// of 60s exceeded" while someone read them.
extension RequestOperation {
    /// Where the deadline is: each case holds what it uses (a timer only while it runs).
    enum DeadlineClock {
        /// No deadline, or it has not started.
        case none
        /// Its timer runs and fires `at` (the clock's time).
        case running(ScheduledTimer, at: TimeInterval)
        /// A breakpoint stopped the operation with `left` seconds of it to go.
        case paused(left: TimeInterval)

        /// The running timer, to cancel when the operation ends.
        var timer: ScheduledTimer? {
            if case .running(let timer, _) = self { return timer }
            return nil
        }
    }

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
            guard !state.hasEnded else { return false }
            state.deadline = .running(timer, at: at)
            return true
        }
    }

    /// Stops the deadline's clock while the operation is stopped at a breakpoint, keeping
    /// what is left of it. Called under the lock; returns the timer to cancel outside it.
    func pauseDeadline(_ state: inout State) -> ScheduledTimer? {
        guard case .running(let timer, let at) = state.deadline else { return nil }
        state.deadline = .paused(left: max(0, at - environment.clock.now()))
        return timer
    }

    /// Starts it again with what was left, once the breakpoint lets the operation go.
    func resumeDeadline() {
        guard let deadline = options.deadline,
              let left = look({ state -> TimeInterval? in
                  guard !state.hasEnded, case .paused(let left) = state.deadline else { return nil }
                  return left
              }) else { return }
        startDeadline(deadline, left: left)
    }
}
