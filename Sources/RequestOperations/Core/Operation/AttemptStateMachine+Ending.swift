import Foundation

/// After the answer: breakpoints, deciding, the backoff before the next attempt, the end.
extension AttemptStateMachine {
    // MARK: - Breakpoints

    /// A breakpoint stops the attempt before it is sent: right after it began (in admission
    /// or asking for a slot, before either did anything).
    mutating func stopBeforeSending(at breakpoint: Int, of id: AttemptID) -> Teardown? {
        guard id == self.id else { return nil }
        switch stage {
        case .admitting(let admitting) where admitting.wait == .interceptors: break
        case .askingForSlot(let asking) where asking.wait == .slot: break
        default: return nil
        }
        let teardown = leave()
        stage = .stopped(breakpoint: breakpoint, .beforeSending)
        return teardown
    }

    /// A breakpoint stops the attempt after its answer: its slot goes back now, the answer
    /// waits for the person.
    mutating func stopAfterAnswer(at breakpoint: Int, of id: AttemptID) -> Teardown? {
        guard id == self.id, case .deciding(let granted, let end) = stage else { return nil }
        var teardown = Teardown()
        teardown.release(granted)
        setStage(.stopped(breakpoint: breakpoint, .afterAnswer(end)), leadRecord: end.leadRecord)
        return teardown
    }

    /// A person let the stopped attempt go on (`needsAdmission` as for ``begin(needsAdmission:expected:)``).
    mutating func resolveBreakpoint(needsAdmission: Bool) -> Resume {
        guard case .stopped(_, let at) = stage else { return .refuse }
        switch at {
        case .afterAnswer(let end):
            setStage(.deciding(nil, end), leadRecord: end.leadRecord)
            return .decide(id, end)
        case .beforeSending:
            stage = needsAdmission ? .admitting(Admitting()) : .askingForSlot(Asking())
            return needsAdmission ? .admit(id) : .askForSlot(id)
        }
    }

    // MARK: - Deciding

    /// Takes out the breaker's pass of an attempt that ended, to tell it how it went (once),
    /// and where the attempt stands.
    mutating func takePass(of id: AttemptID) -> CircuitPass? {
        guard id == self.id, case .deciding(var granted?, let end) = stage else { return nil }
        defer { granted.pass = nil; setStage(.deciding(granted, end), leadRecord: end.leadRecord) }
        return granted.pass
    }

    /// A reactor runs after the answer: the attempt gives back its slot and waits for the
    /// run (``workStarted(_:of:)`` takes the task that waits).
    mutating func react(_ name: String, of id: AttemptID) -> Teardown? {
        guard id == self.id, case .deciding(let granted, _) = stage else { return nil }
        var teardown = Teardown()
        teardown.release(granted)
        stage = .reacting(name: name, work: nil)
        return teardown
    }

    /// The attempt's end as it is decided, while it decides.
    func deciding(of id: AttemptID) -> AttemptEnd? {
        guard id == self.id, case .deciding(_, let end) = stage else { return nil }
        return end
    }

    /// Whether attempt `id` can end now (fail into a retry or the end): it is preparing,
    /// deciding or after a reactor's run.
    func canClose(_ id: AttemptID) -> Bool {
        guard id == self.id else { return false }
        switch stage {
        case .preparing, .deciding, .reacting: return true
        default: return false
        }
    }

    // MARK: - Retrying

    /// The attempt failed and the next one waits until `until`; the attempt's number moves
    /// on. The teardown holds what the attempt held; nil when it cannot end now.
    mutating func retryScheduled(until: TimeInterval, of id: AttemptID) -> Teardown? {
        guard canClose(id) else { return nil }
        let teardown = leave()
        stage = .waitingToRetry(until: until, timer: nil, observation: nil)
        attempt += 1
        return teardown
    }

    /// The timer that begins the next attempt, and the observation of the host that may
    /// bring it forward: made once the wait began (a timer made before could fire into the
    /// stage before). The teardown holds them when the wait is over already.
    mutating func retryWaitStarted(timer: ScheduledTimer, observation: RecoveryObservation?, of id: AttemptID) -> Teardown {
        guard id == self.id, case .waitingToRetry(let until, nil, let held) = stage else {
            var late = Teardown(timer: timer)
            late.observation = observation
            return late
        }
        stage = .waitingToRetry(until: until, timer: timer, observation: held ?? observation)
        var unused = Teardown()
        if held != nil { unused.observation = observation }
        return unused
    }

    /// The host came back: the next attempt is due sooner, at `until`; its timer is made
    /// again (``retryWaitStarted(timer:observation:of:)``). The observation is over. Nil
    /// when the attempt does not wait, or is due sooner anyway.
    mutating func retrySooner(until: TimeInterval, of id: AttemptID) -> Teardown? {
        guard id == self.id, case .waitingToRetry(let due, let old, let observation) = stage, until < due else { return nil }
        var replaced = Teardown(timer: old)
        replaced.observation = observation
        stage = .waitingToRetry(until: until, timer: nil, observation: nil)
        return replaced
    }

    // MARK: - The end

    /// The operation ends: whatever the stage held is let go of. Nil when it ended already.
    mutating func finish(_ outcome: RequestOutcome) -> Teardown? {
        if isFinished { return nil }
        var teardown = leave()
        // The deadline's timer goes with the rest.
        teardown.merge(Teardown(timer: deadline.timer))
        deadline = .none
        stage = .finished(outcome)
        forcedFault = nil
        return teardown
    }
}
