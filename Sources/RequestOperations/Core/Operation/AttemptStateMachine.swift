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
    private(set) var stage: Stage = .pending
    /// The number of the attempt under way or next, from 1: retries, requeues and hedges count.
    private(set) var attempt = 1
    /// Attempts begun by reactors' requeues, not counted against the retry policy.
    private(set) var requeues = 0
    /// The attempt under way; a new one for each ``begin(needsAdmission:expected:)``.
    private(set) var id: AttemptID = 0
    /// The answer or failure a person chose at a breakpoint for the next send, made in the
    /// server's place.
    private(set) var forcedFault: FaultRule?

    /// The phase the world sees (events, the monitor).
    var phase: RequestPhase { stage.phase }

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

    private mutating func enter(_ needsAdmission: Bool, teardown: Teardown) -> Entry {
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
    var held: Teardown { stage.holdings }

    /// Leaves the stage: what it held, to let go of (the caller sets the next stage).
    private mutating func leave() -> Teardown {
        stage.holdings
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
        guard id == self.id, case .askingForSlot(var asking) = stage, case .rateLimit = asking.wait else { return Teardown(timers: [timer]) }
        let old = asking.rateLimitTimer
        asking.rateLimitTimer = timer
        stage = .askingForSlot(asking)
        return Teardown(timers: [old])
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
            return Teardown(timers: [timer])
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
        var over = Teardown(timers: [asking.circuitTimer])
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
        var over = Teardown(timers: [asking.circuitTimer, asking.rateLimitTimer])
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
    /// (``timersStarted(attempt:read:hedge:of:)``). Refused (the attempt ended while it was
    /// prepared): the teardown discards the task.
    mutating func sent(_ task: TransportTask, at now: TimeInterval, uploadTotal: Int?, of id: AttemptID) -> Teardown? {
        guard id == self.id, case .preparing(let granted, _) = stage else {
            var refused = Teardown()
            refused.unsent = task
            return refused
        }
        let flight = InFlight(granted: granted, task: task)
        flight.lastProgress = now
        flight.uploadTotal = uploadTotal
        stage = .inFlight(flight)
        forcedFault = nil
        return nil
    }

    /// The timers of attempt `id` in flight: its timeout, its read timeout, its first
    /// hedge. Made once it was sent, so none can fire into the stage before; the teardown
    /// holds them when the attempt is over already (false), or the ones they replace.
    mutating func timersStarted(attempt: ScheduledTimer?, read: ScheduledTimer?, hedge: ScheduledTimer?, of id: AttemptID) -> (Bool, Teardown) {
        let replaced = inFlight(of: id) { flight -> Teardown in
            defer { (flight.timer, flight.readTimer, flight.hedgeTimer) = (attempt, read, hedge) }
            return Teardown(timers: flight.timers)
        }
        return replaced.map { (true, $0) } ?? (false, Teardown(timers: [attempt, read, hedge]))
    }

    /// A person chose the answer or failure of the next send, at a breakpoint.
    mutating func force(_ fault: FaultRule?) {
        forcedFault = fault
    }

    // MARK: - Inputs while in flight

    /// The lead task `task`'s attempt in flight, for `change` to change; nil (and nothing
    /// changed) when `task` is not the lead of an attempt in flight.
    @discardableResult
    func inFlight<T>(lead task: Int, _ change: (InFlight) -> T) -> T? {
        guard case .inFlight(let flight) = stage, flight.task.identifier == task else { return nil }
        return change(flight)
    }

    /// The attempt in flight, for `change` to change, if `id` is still the attempt under way.
    @discardableResult
    func inFlight<T>(of id: AttemptID, _ change: (InFlight) -> T) -> T? {
        guard self.id == id, case .inFlight(let flight) = stage else { return nil }
        return change(flight)
    }

    /// The attempt in flight, whatever its lead.
    private func anyInFlight<T>(_ change: (InFlight) -> T?) -> T? {
        guard case .inFlight(let flight) = stage else { return nil }
        return change(flight)
    }

    /// Takes the racing hedges out of the attempt in flight (to close them).
    func takeRacers() -> [Racer] {
        anyInFlight { $0.takeRacers() } ?? []
    }

    /// A response came on `task`: if hedges race, the first response wins
    /// (``InFlight/settleRace(answeredBy:)``).
    func settleRace(answeredBy task: Int) -> (losers: [Racer], timer: ScheduledTimer?)? {
        anyInFlight { $0.settleRace(answeredBy: task) }
    }

    /// A racing hedge failed before any response: it leaves the race.
    func removeRacer(at index: Int) -> Racer? {
        anyInFlight { $0.removeRacer(at: index) }
    }

    /// The lead failed before any response while hedges race it: the oldest racer leads.
    func promoteRacer() {
        anyInFlight { $0.promoteRacer() }
    }

    /// Body bytes of the attempt in flight not yet told in a `data` event, taken to be told now.
    func takeUnannouncedBytes(at now: TimeInterval) -> Int {
        anyInFlight { $0.takeUnannouncedBytes(at: now) } ?? 0
    }

    /// The copy of the attempt in flight whose task is `task`; nil for a task of an attempt
    /// that is over (a late callback).
    func copy(_ task: Int) -> Copy? {
        guard case .inFlight(let flight) = stage else { return nil }
        return flight.copy(task)
    }

    /// The attempt's lead task is `task`.
    func isLead(_ task: Int) -> Bool {
        if case .inFlight(let flight) = stage { flight.task.identifier == task } else { false }
    }

    /// The record of the attempt under way: its lead's when hedges were sent.
    var leadRecord: Int? {
        switch stage {
        case .inFlight(let flight): flight.leadRecord
        case .deciding(_, let end), .stopped(_, .afterAnswer(let end)): end.leadRecord
        default: nil
        }
    }

    /// A hedge of attempt `id` was sent: it is attempt number ``attempt`` from now on.
    /// Nil when the attempt is over (the caller discards the task and cancels the timer).
    mutating func hedgeSent(_ racer: TransportTask, record: Int, lead: Int, nextTimer: ScheduledTimer?, of id: AttemptID) -> Int? {
        let sent = inFlight(of: id) { flight -> Bool in
            flight.leadRecord = lead
            flight.racers.append(Racer(task: racer, record: record))
            if let nextTimer { flight.hedgeTimer = nextTimer }
            return true
        }
        guard sent != nil else { return nil }
        attempt += 1
        return attempt
    }

    /// The lead task ended, as `end` says: the attempt decides (reactors, a breakpoint, the
    /// retry policy) and still holds its slot. Its timers and any racers are let go of.
    mutating func taskEnded(_ task: Int, _ end: AttemptEnd) -> Teardown? {
        guard case .inFlight(let flight) = stage, flight.task.identifier == task else { return nil }
        var teardown = Teardown(timers: flight.timers)
        teardown.tasks = flight.racers.map(\.task)
        stage = .deciding(flight.granted, end)
        return teardown
    }


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
        stage = .stopped(breakpoint: breakpoint, .afterAnswer(end))
        return teardown
    }

    /// A person let the stopped attempt go on (`needsAdmission` as for ``begin(needsAdmission:expected:)``).
    mutating func resolveBreakpoint(needsAdmission: Bool) -> Resume {
        guard case .stopped(_, let at) = stage else { return .refuse }
        switch at {
        case .afterAnswer(let end):
            stage = .deciding(nil, end)
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
        defer { granted.pass = nil; stage = .deciding(granted, end) }
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
            var late = Teardown(timers: [timer])
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
        var replaced = Teardown(timers: [old])
        replaced.observation = observation
        stage = .waitingToRetry(until: until, timer: nil, observation: nil)
        return replaced
    }

    // MARK: - The end

    /// The operation ends: whatever the stage held is let go of. Nil when it ended already.
    mutating func finish(_ outcome: RequestOutcome) -> Teardown? {
        if isFinished { return nil }
        let teardown = leave()
        stage = .finished(outcome)
        forcedFault = nil
        return teardown
    }
}
