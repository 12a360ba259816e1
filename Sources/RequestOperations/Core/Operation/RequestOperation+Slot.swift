import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The one way to a slot: the host's rate-limit pause, then its circuit breaker, then the
/// gate — each asked outside the lock, each answer given to the machine
/// (AttemptStateMachine+Slot.swift). The grant continues in ``slotGranted(_:slotHost:)``.
extension RequestOperation {
    /// Asks, in this order, the host's rate-limit pause, its breaker and the gate.
    func askForSlot(_ id: AttemptID) {
        if environment.rateLimits != nil || environment.circuitBreaker != nil,
           let host = transition(AttemptHost()) {
            guard passRateLimit(id, host: host), passCircuitBreaker(id, host: host) else { return }
        }
        askGate(id)
    }

    /// `host:port` of what the attempt sends (its parse kept for the next ask).
    struct AttemptHost: OperationTransition {
        func apply(to state: inout State, of operation: RequestOperation) -> String? {
            state.attemptHost()
        }
    }

    /// The host asked every client to slow down: the attempt waits, without a slot, until
    /// the pause is over, then asks again. False when it waits or the operation ended.
    private func passRateLimit(_ id: AttemptID, host: String) -> Bool {
        guard let limits = environment.rateLimits, let (until, _) = limits.waitUntil(host) else { return true }
        let clock = environment.clock, events = environment.events
        guard transition(RateLimitPause(host: host, until: until, shownUntil: events.elapsed() + (until - clock.now()), id: id)) else { return false }
        let timer = clock.schedule(at: until) { [weak self] in self?.rateLimitPauseOver(id) }
        tearDown(transition(RateLimitTimerStarted(timer: timer, id: id)))
        return false
    }

    /// Attempt `id` waits for the host's pause (`until` on the clock, `shownUntil` in the
    /// events' time): false when it ended meanwhile.
    struct RateLimitPause: OperationTransition {
        let host: String
        let until: TimeInterval
        let shownUntil: TimeInterval
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Bool {
            switch state.machine.rateLimitPause(host: host, until: until, of: id) {
            case .announce: operation.publish(&state, .rateLimitWaiting(host: host, until: shownUntil))
            case .stay: break
            case .refuse: return false
            }
            return true
        }
    }

    /// ``AttemptStateMachine/rateLimitTimerStarted(_:of:)``.
    struct RateLimitTimerStarted: OperationTransition {
        let timer: ScheduledTimer
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Teardown {
            state.machine.rateLimitTimerStarted(timer, of: id)
        }
    }

    private func rateLimitPauseOver(_ id: AttemptID) {
        guard transition(RateLimitPauseOver(id: id)) else { return }
        askForSlot(id)
    }

    /// ``AttemptStateMachine/rateLimitPauseOver(of:)``.
    struct RateLimitPauseOver: OperationTransition {
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Bool {
            state.machine.rateLimitPauseOver(of: id)
        }
    }

    /// Asks the host's breaker before the attempt takes a slot. False when the attempt waits
    /// (without a slot; the breaker calls ``askForSlot(_:)`` again when the wait is over),
    /// was refused (the operation failed), or the operation ended meanwhile.
    private func passCircuitBreaker(_ id: AttemptID, host: String) -> Bool {
        guard let breaker = environment.circuitBreaker else { return true }
        // Strong: see the deadline timer in RequestOperation.swift.
        switch breaker.admit(host, whenReady: { [self] in askForSlot(id) }) {
        case .send(let pass):
            let (passed, teardown) = transition(CircuitPassed(pass: pass, id: id))
            tearDown(teardown)
            return passed
        case .wait(let wait, _):
            let (wantsTimer, unused) = transition(CircuitWaits(host: host, wait: wait, id: id))
            tearDown(unused)
            if wantsTimer, let maxWait = breaker.maxWait {
                let clock = environment.clock
                let timer = clock.schedule(at: clock.now() + maxWait) { [weak self] in
                    self?.circuitWaitTooLong(host: host, waited: maxWait, id: id)
                }
                tearDown(transition(CircuitTimerStarted(timer: timer, id: id)))
            }
            return false
        case .refuse(let reason):
            fail(id, .circuitOpen(host: host, reason: reason), reason: reason)
            return false
        }
    }

    /// ``AttemptStateMachine/circuitPassed(_:of:)``.
    struct CircuitPassed: OperationTransition {
        let pass: CircuitPass
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> (Bool, Teardown) {
            state.machine.circuitPassed(pass, of: id)
        }
    }

    /// The breaker keeps attempt `id` waiting (``AttemptStateMachine/circuitWait(host:_:of:)``), said once.
    struct CircuitWaits: OperationTransition {
        let host: String
        let wait: CircuitWait
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> (wantsTimer: Bool, unused: Teardown) {
            let (change, wantsTimer, unused) = state.machine.circuitWait(host: host, wait, of: id)
            switch change {
            case .announce: operation.publish(&state, .circuitWaiting(host: host))
            case .stay, .refuse: break
            }
            return (wantsTimer, unused)
        }
    }

    /// ``AttemptStateMachine/circuitTimerStarted(_:of:)``.
    struct CircuitTimerStarted: OperationTransition {
        let timer: ScheduledTimer
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Teardown {
            state.machine.circuitTimerStarted(timer, of: id)
        }
    }

    /// The breaker kept the attempt waiting for its longest wait: the operation fails.
    private func circuitWaitTooLong(host: String, waited: TimeInterval, id: AttemptID) {
        let reason = "circuit for \(host) still open after waiting \(DurationText.format(waited))"
        fail(id, .circuitOpen(host: host, reason: reason), reason: reason) { $0.circuitWaitExpired(of: id) }
    }

    private func askGate(_ id: AttemptID) {
        guard let gate = environment.gate else {
            slotGranted(id, slotHost: nil)
            return
        }
        let priority = queuePriority.rawValue
        // The host only matters to a gate with a per-host limit: no URL parsing otherwise.
        let slotHost = gate.perHostLimit == nil ? nil : transition(AttemptHost())
        let ticket = gate.acquire(host: slotHost, priority: priority) { [self] in slotGranted(id, slotHost: slotHost) }
        transition(TicketIssued(ticket: ticket, id: id))
    }

    /// ``AttemptStateMachine/ticketIssued(_:of:)``.
    struct TicketIssued: OperationTransition {
        let ticket: ConcurrencyGate.Ticket
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) {
            state.machine.ticketIssued(ticket, of: id)
        }
    }

    /// The host's breaker opened (or half-opened) after it let this attempt through and
    /// before its request reached the transport — attempts admitted together wait for slots,
    /// and 42 went to a dead host in the 10 ms after its breaker opened. Such an attempt gives
    /// back its pass and its slot and asks the breaker again (it waits like the rest); a
    /// probe goes on. True when the attempt went back to ask.
    func asksAgainForCircuit(_ id: AttemptID, slot: HeldSlot) -> Bool {
        guard let breaker = environment.circuitBreaker else { return false }
        let (pass, host) = transition(PassHeld(slot: slot))
        // Asked outside the operation's lock: the breaker's lock is never taken under it.
        guard let pass, !pass.isProbe, let host, !breaker.isClosed(host) else { return false }
        guard let back = transition(SlotReturned(id: id)) else { return false }
        tearDown(back)
        switch slot {
        case .fromGate(let host): environment.gate?.release(host: host)
        case .inMachine: break
        }
        askForSlot(id)
        return true
    }

    /// The breaker's pass the attempt holds where `slot` is, and its host.
    struct PassHeld: OperationTransition {
        let slot: HeldSlot

        func apply(to state: inout State, of operation: RequestOperation) -> (CircuitPass?, String?) {
            switch slot {
            case .fromGate: (state.machine.passAskingForSlot, state.attemptHost())
            case .inMachine: (state.machine.passPreparing, state.attemptHost())
            }
        }
    }

    /// ``AttemptStateMachine/slotReturned(of:)``.
    struct SlotReturned: OperationTransition {
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Teardown? {
            state.machine.slotReturned(of: id)
        }
    }

    /// Where the slot of an attempt that asks the breaker again is.
    enum HeldSlot {
        /// Just granted by the gate (per host: `host`'s); the machine does not hold it yet.
        case fromGate(host: String?)
        /// The machine holds it (the attempt was preparing).
        case inMachine
    }
}
