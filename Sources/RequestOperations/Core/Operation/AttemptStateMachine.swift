import Foundation

/// Which attempt work was started for: the machine's ``AttemptStateMachine/id`` then.
typealias AttemptID = UInt64

/// An operation's attempts as one state machine: where they are (``stage``, shown as a
/// ``RequestPhase``), what each stage holds (a gate ticket, a slot, the task, its timers, the
/// backoff's timer), how attempts are numbered, and which attempt is under way (``id``).
///
/// In the style of AsyncHTTPClient's `RequestBag+StateMachine`: a value (but for the one
/// object an attempt in flight is: ``InFlight``) with no lock, no clock and no transport, so every stage × input is tested alone
/// (`AttemptStateMachineTests`). Inputs bring the handles the operation made for them (a
/// timer, a task); the result says what to do next and carries a ``Teardown`` of what the
/// stage let go of — or, for an input that does not fit, of what the input brought. The
/// operation's pattern is: lock → give the input → unlock → perform what it returned.
///
/// Work started for an attempt (a timer, a task, the interceptors) names the attempt by its
/// ``id``; an input for an attempt that is over is refused here, in one place, so no caller
/// can forget to check.
///
/// The cycle of one attempt:
///
/// ```
/// pending/waitingToRetry ─begin─▶ admitting ─intercepted─▶ askingForSlot ─slotGranted─▶ preparing ─sent─▶ inFlight ─taskEnded─▶ deciding
///        ▲                         (held, reactor)          (rate limit, breaker)          │ slotReturned                       │
///        └──────────── retryScheduled ◀──────────────────────────────────────────────────────────────────────────────────────┘
///   stopped: after begin (before sending) or while deciding (after the answer); reacting: a reactor's run
///   after the answer, then requeue or decide; finish: from anywhere.
/// ```
struct AttemptStateMachine {
    // Set only in AttemptStateMachine.swift and its `+` extensions: the machine is the one
    // place an attempt's stage, number and id change (`MachineConfinementTests` checks that no
    // other file assigns them).
    var stage: Stage = .pending {
        didSet {
            // A new stage has no lead record unless the assignment beside it says one (below),
            // and no flight but in flight.
            storedLeadRecord = nil
            if flightBox != nil, !stage.isInFlight { flightBox = nil }
        }
    }
    /// What the `inFlight` stage holds (AttemptInFlight.swift): set with the stage, and only
    /// while the stage is `inFlight`. Beside the stage in a box rather than its payload: the
    /// flight holds existentials (its task's handle, its timers), so it is address-only, and
    /// every read or change of it as a payload copied it whole — a retain and release of each
    /// handle — a dozen times a request (#58). Boxed, it is read and changed in place.
    var flightBox: FlightBox?

    /// The attempt in flight, in place (``flightBox``). Shared only by a copy of the whole
    /// machine, which makes its own before a change (`changeFlight`). Not `Sendable`: it lives
    /// in the machine, behind the operation's lock.
    final class FlightBox {
        var value: InFlight

        init(_ value: InFlight) {
            self.value = value
        }
    }
    /// ``leadRecord``, kept beside the stage: read at every input of an attempt in flight, and
    /// matching it out of the stage copied the whole flight (its handles retained and
    /// released), 2–3 % of a request's CPU (#58). Set after each assignment of a stage that
    /// has one: the flight's, or the ended attempt's.
    var storedLeadRecord: Int?
    /// The number of the attempt under way or next, from 1: retries, requeues and hedges count.
    var attempt = 1
    /// Attempts begun by reactors' requeues, not counted against the retry policy.
    var requeues = 0
    /// The attempt under way; a new one for each ``begin(needsAdmission:expected:)``.
    var id: AttemptID = 0
    /// The answer or failure a person chose at a breakpoint for the next send, made in the
    /// server's place.
    var forcedFault: FaultRule?
    /// The operation's deadline, across its attempts (AttemptStateMachine+Deadline.swift).
    var deadline = DeadlineClock.none

    /// The phase the world sees (events, the monitor).
    var phase: RequestPhase { stage.phase }

    /// What an input the operation's own order rules out does (a stale one, for an attempt
    /// that is over, is refused quietly): in debug builds it stops there, naming the input and
    /// the stage; in release it is refused like a stale one. The machine's table test collects
    /// them instead (`withValue`), to check which pairs are impossible.
    @TaskLocal static var onImpossible: @Sendable (String) -> Void = { assertionFailure($0) }

    func impossible(_ input: String) {
        Self.onImpossible("\(input) cannot come in stage \(stage.phase)")
    }

    /// Where a stopped operation is stopped; nil when it is not.
    var breakpointStage: Breakpoint.Stage? {
        guard case .stopped(_, let at) = stage else { return nil }
        return at == .beforeSending ? .beforeSend : .afterResponse
    }

    var isWaitingToRetry: Bool {
        if case .waitingToRetry = stage { true } else { false }
    }

    var isFinished: Bool {
        if case .finished = stage { true } else { false }
    }

    /// Attempt `id` is the one under way and the operation has not ended.
    func isUnderWay(_ id: AttemptID) -> Bool {
        id == self.id && !isFinished
    }

    // MARK: - Beginning an attempt

    /// An attempt begins: the first, a retry when its wait is over (`expected`: the attempt
    /// that waited, so only one of its timer, an early retry and `retryNow` begins it).
    mutating func begin(needsAdmission: Bool, expected: AttemptID? = nil) -> Entry {
        if let expected, expected != id { return .refuse }
        switch stage {
        case .pending, .waitingToRetry: return enter(needsAdmission, teardown: leave())
        default: return .refuse
        }
    }

    /// A reactor requeues the attempt that ended: the next begins at once, not counted
    /// against the retry policy.
    mutating func requeue(needsAdmission: Bool, of expected: AttemptID) -> Entry {
        guard expected == id else { return .refuse }
        switch stage {
        case .deciding, .reacting:
            attempt += 1
            requeues += 1
            return enter(needsAdmission, teardown: leave())
        default: return .refuse
        }
    }

    mutating func enter(_ needsAdmission: Bool, teardown: Teardown) -> Entry {
        id += 1
        forcedFault = nil
        if needsAdmission {
            stage = .admitting(Admitting())
            return .admit(id, teardown)
        }
        stage = .askingForSlot(Asking())
        return .askForSlot(id, teardown)
    }

    /// What the stage holds now: what leaving it would let go of.
    var held: Teardown { flightBox?.value.holdings ?? stage.holdings }

    /// Leaves the stage: what it held, to let go of (the caller sets the next stage).
    mutating func leave() -> Teardown {
        held
    }

    /// Work began for attempt `id` (its interceptors, its preparer, a reactor's wait): kept
    /// while its stage lasts. The teardown holds it when its attempt is over or its stage
    /// has work already.
    mutating func workStarted(_ work: Work, of id: AttemptID) -> Teardown {
        var refused = Teardown()
        refused.work = [work]
        guard id == self.id else { return refused }
        switch stage {
        case .admitting(var admitting) where admitting.work == nil:
            admitting.work = work
            stage = .admitting(admitting)
        case .preparing(let granted, nil):
            stage = .preparing(granted, work: work)
        case .reacting(let name, nil):
            stage = .reacting(name: name, work: work)
        default:
            return refused
        }
        return Teardown()
    }

    // MARK: - Admission: interceptors, batches, reactors that hold new requests

    mutating func hold(batch: String, of id: AttemptID) -> Change {
        changeAdmission(of: id, from: [.interceptors], to: .held(batch: batch))
    }

    mutating func released(of id: AttemptID) -> Change {
        guard case .admitting(let admitting) = stage, case .held = admitting.wait else { return .refuse }
        return changeAdmission(of: id, from: [admitting.wait], to: .interceptors)
    }

    /// The attempt waits for a reactor's run: before it is sent (in admission), or after
    /// its answer (``react(_:of:)`` entered that wait).
    mutating func waitForReactor(_ name: String, of id: AttemptID) -> Change {
        guard id == self.id else { return .refuse }
        if case .reacting(let current, let work) = stage {
            guard current != name else { return .stay }
            stage = .reacting(name: name, work: work)
            return .announce
        }
        guard case .admitting(var admitting) = stage else { return .refuse }
        switch admitting.wait {
        case .interceptors, .reactor:
            admitting.wait = .reactor(name)
            stage = .admitting(admitting)
            return .announce
        case .held:
            return .refuse
        }
    }

    /// The reactor's run ended well: before sending, the attempt goes back to its interceptors.
    mutating func reactorFinished(of id: AttemptID) -> Change {
        guard id == self.id else { return .refuse }
        switch stage {
        case .reacting: return .stay
        case .admitting(var admitting):
            guard case .reactor = admitting.wait else { return .refuse }
            admitting.wait = .interceptors
            stage = .admitting(admitting)
            return .announce
        default: return .refuse
        }
    }

    /// Interceptors and holding reactors let the attempt through: it asks for a slot. The
    /// admission's work is done (it is the caller), so it is not cancelled.
    mutating func intercepted(of id: AttemptID) -> Bool {
        guard id == self.id, case .admitting(let admitting) = stage, admitting.wait == .interceptors else { return false }
        stage = .askingForSlot(Asking())
        return true
    }

    private mutating func changeAdmission(of id: AttemptID, from: [AdmissionWait], to next: AdmissionWait) -> Change {
        guard id == self.id, case .admitting(var admitting) = stage, from.contains(admitting.wait) else { return .refuse }
        admitting.wait = next
        stage = .admitting(admitting)
        return .announce
    }

}
