import Foundation

/// The operation's deadline (``RequestOptions/deadline``) in the machine: one timer from the
/// start, which stands still while a person holds the operation at a breakpoint (their
/// thinking time is not the upstream's: 15 of 20 requests stopped at a breakpoint used to fail
/// with "deadline of 60s exceeded" while someone read them). The end lets go of its timer with
/// everything else the machine holds (``finish(_:)``).
extension AttemptStateMachine {
    /// Where the deadline is: each case holds what it uses (a timer only while it runs).
    enum DeadlineClock {
        /// No deadline, or it has not started, or the operation ended.
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

    /// The deadline's timer, due `at`: kept unless the operation ended (false: the caller
    /// cancels it).
    mutating func deadlineStarted(_ timer: ScheduledTimer, at: TimeInterval) -> Bool {
        guard !isFinished else { return false }
        deadline = .running(timer, at: at)
        return true
    }

    /// A breakpoint stopped the operation at `now`: the deadline keeps what is left of it;
    /// its timer is returned, to cancel after the lock.
    mutating func pauseDeadline(at now: TimeInterval) -> ScheduledTimer? {
        guard case .running(let timer, let at) = deadline else { return nil }
        deadline = .paused(left: max(0, at - now))
        return timer
    }

    /// What is left of a paused deadline, to start it again with (nil: none is paused, or
    /// the operation ended).
    var deadlineLeft: TimeInterval? {
        guard !isFinished, case .paused(let left) = deadline else { return nil }
        return left
    }
}
