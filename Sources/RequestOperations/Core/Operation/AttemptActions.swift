import Foundation

/// What the machine's inputs say the operation does next. Each input has its own, so every
/// caller switches on exactly the answers its input can give (no `default:`), and a new
/// answer makes the compiler name every place that must handle it.
extension AttemptStateMachine {
    /// What a change of the attempt's wait says.
    enum Change: Equatable {
        /// The input does not fit the stage: nothing changed.
        case refuse
        /// The phase is what the input says already: nothing to announce again.
        case stay
        /// The phase changed: the operation publishes its event.
        case announce
    }

    /// Where a new attempt (or one a breakpoint let go) goes first.
    enum Entry {
        case refuse
        /// Run the interceptors and holding reactors (``workStarted(_:of:)`` takes their task).
        case admit(AttemptID, Teardown)
        /// Ask the rate-limit pause, the breaker and the gate for a slot.
        case askForSlot(AttemptID, Teardown)
    }

    /// What the gate's slot leads to.
    enum Grant {
        /// The attempt ended meanwhile: the slot goes straight back.
        case refuse
        /// Run the preparer (``workStarted(_:of:)`` takes its task), then send.
        case prepare
        case send
    }

    /// Where a resolved stop goes on.
    enum Resume {
        case refuse
        case admit(AttemptID)
        case askForSlot(AttemptID)
        /// On from the answer to reactors and the retry decision.
        case decide(AttemptID, AttemptEnd)
    }
}
