import Foundation

/// Asking for a slot, in one order: the host's rate-limit pause, its circuit breaker, the
/// gate; then preparing and sending. The operation asks each (outside its lock) and gives
/// the answers here.
extension AttemptStateMachine {
    // MARK: - Asking for a slot: the rate-limit pause, the breaker, the gate; preparing and sending

    /// The host asked every client to wait until `until`: the attempt waits, without a slot,
    /// then asks again (``rateLimitTimerStarted(_:of:)`` takes the timer that ends the wait;
    /// made once the stage says so, it cannot fire into the stage before).
    mutating func rateLimitPause(host: String, until: TimeInterval, of id: AttemptID) -> Change {
        guard id == self.id, case .askingForSlot(var asking) = stage else { return .refuse }
        let next = SlotWait.rateLimit(host: host, until: until)
        let change: Change = asking.wait == next ? .stay : .announce
        asking.wait = next
        stage = .askingForSlot(asking)
        return change
    }

    /// The timer that ends the pause; the teardown holds the one it replaces, or this one
    /// when the attempt no longer waits for a pause.
    mutating func rateLimitTimerStarted(_ timer: ScheduledTimer, of id: AttemptID) -> Teardown {
        guard id == self.id, case .askingForSlot(var asking) = stage, case .rateLimit = asking.wait else { return Teardown(timer: timer) }
        let old = asking.rateLimitTimer
        asking.rateLimitTimer = timer
        stage = .askingForSlot(asking)
        return Teardown(timer: old)
    }

    /// The pause is over: true when the attempt asks again.
    mutating func rateLimitPauseOver(of id: AttemptID) -> Bool {
        guard id == self.id, case .askingForSlot(var asking) = stage, case .rateLimit = asking.wait else { return false }
        asking.rateLimitTimer = nil
        stage = .askingForSlot(asking)
        return true
    }

    /// The breaker keeps the attempt waiting (`wait`). A wake-up that already let the attempt
    /// through wins over this older answer. `wantsTimer`: the breaker's longest wait is to be
    /// timed from now (``circuitTimerStarted(_:of:)``); it is timed once, from the first wait.
    /// The teardown holds what is not kept.
    mutating func circuitWait(host: String, _ wait: CircuitWait, of id: AttemptID) -> (change: Change, wantsTimer: Bool, unused: Teardown) {
        var unused = Teardown()
        unused.circuitWait = wait
        guard id == self.id, case .askingForSlot(var asking) = stage, asking.pass == nil else { return (.refuse, false, unused) }
        unused.circuitWait = asking.circuitWait
        asking.circuitWait = wait
        let next = SlotWait.circuit(host: host)
        let change: Change = asking.wait == next ? .stay : .announce
        asking.wait = next
        stage = .askingForSlot(asking)
        return (change, asking.circuitTimer == nil, unused)
    }

    /// The timer that ends the wait for the breaker at its longest; the teardown holds it
    /// when the attempt no longer waits for the breaker or has one already.
    mutating func circuitTimerStarted(_ timer: ScheduledTimer, of id: AttemptID) -> Teardown {
        guard id == self.id, case .askingForSlot(var asking) = stage, asking.circuitWait != nil, asking.circuitTimer == nil else {
            return Teardown(timer: timer)
        }
        asking.circuitTimer = timer
        stage = .askingForSlot(asking)
        return Teardown()
    }

    /// The breaker let the attempt through: it keeps the pass (told how the attempt went)
    /// and the wait for the breaker is over. Refused: the pass goes back.
    mutating func circuitPassed(_ pass: CircuitPass, of id: AttemptID) -> (Bool, Teardown) {
        guard id == self.id, case .askingForSlot(var asking) = stage else {
            var refused = Teardown()
            refused.pass = pass
            return (false, refused)
        }
        var over = Teardown(timer: asking.circuitTimer)
        over.circuitWait = asking.circuitWait
        (asking.pass, asking.circuitWait, asking.circuitTimer) = (pass, nil, nil)
        stage = .askingForSlot(asking)
        return (true, over)
    }

    /// The breaker's longest wait is over while the attempt still waits for it: true when
    /// the operation fails.
    func circuitWaitExpired(of id: AttemptID) -> Bool {
        guard id == self.id, case .askingForSlot(let asking) = stage, case .circuit = asking.wait else { return false }
        return true
    }

    /// The gate's ticket for the attempt's wait, withdrawn if the attempt ends before its
    /// slot comes. One that comes after the slot (granted at once) or after the end is not
    /// kept: its grant, when it comes, finds the attempt over and gives the slot back.
    mutating func ticketIssued(_ ticket: ConcurrencyGate.Ticket, of id: AttemptID) {
        guard id == self.id, case .askingForSlot(var asking) = stage else { return }
        asking.ticket = ticket
        stage = .askingForSlot(asking)
    }

    /// The breaker's pass the attempt asks the gate with, if the breaker was asked.
    var passAskingForSlot: CircuitPass? {
        if case .askingForSlot(let asking) = stage { asking.pass } else { nil }
    }

    /// The gate gave the attempt a slot (per host: `slotHost`'s). The gate's ticket is
    /// spent by the grant; a wait for the breaker or the pause still held is let go of.
    mutating func slotGranted(slotHost: String?, prepares: Bool, of id: AttemptID) -> (Grant, Teardown) {
        guard id == self.id, case .askingForSlot(let asking) = stage else { return (.refuse, Teardown()) }
        var over = Teardown(timer: asking.circuitTimer, asking.rateLimitTimer)
        over.circuitWait = asking.circuitWait
        stage = .preparing(Granted(slotHost: slotHost, pass: asking.pass), work: nil)
        return (prepares ? .prepare : .send, over)
    }

    /// The host's breaker opened after it let this attempt through and before its request
    /// reached the transport: the attempt gives back its pass (and the slot it holds) and
    /// asks again. Nil when the attempt is not asking or preparing any more.
    mutating func slotReturned(of id: AttemptID) -> Teardown? {
        guard id == self.id else { return nil }
        var back = Teardown()
        switch stage {
        case .askingForSlot(let asking):
            // Its ticket was spent by the grant that came.
            back.pass = asking.pass
            back.timers = [asking.circuitTimer, asking.rateLimitTimer].compactMap { $0 }
            back.circuitWait = asking.circuitWait
        case .preparing(let granted, let work):
            back.release(granted)
            back.work = work.map { [$0] } ?? []
        default:
            return nil
        }
        stage = .askingForSlot(Asking())
        return back
    }

    /// The breaker's pass of the attempt preparing: asked again after a slow preparer.
    var passPreparing: CircuitPass? {
        if case .preparing(let granted, _) = stage { granted.pass } else { nil }
    }

    /// The request is on the transport as `task`. Its timers come once it is resumed
    /// (``timersStarted(_:of:)``). Refused (the attempt ended while it was
    /// prepared): the teardown discards the task.
    mutating func sent(_ task: TransportTask, at now: TimeInterval, uploadTotal: Int?, of id: AttemptID) -> Teardown? {
        guard id == self.id, case .preparing(let granted, _) = stage else {
            var refused = Teardown()
            refused.unsent = task
            return refused
        }
        var flight = InFlight(granted: granted, task: task)
        flight.lastProgress = now
        flight.uploadTotal = uploadTotal
        stage = .inFlight
        flightBox = FlightBox(flight)
        storedLeadRecord = flight.leadRecord
        forcedFault = nil
        return nil
    }

    /// A person chose the answer or failure of the next send, at a breakpoint.
    mutating func force(_ fault: FaultRule?) {
        forcedFault = fault
    }
}
