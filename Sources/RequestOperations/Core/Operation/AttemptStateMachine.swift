import Foundation

/// Where an operation's attempts are, as one state machine: every change of
/// ``RequestPhase`` is an ``Input`` given to ``apply(_:)``, which either makes the change and
/// says what the operation does next (an ``Action``), or refuses an input that does not fit
/// the phase (a late timer, a second answer, a resolution for a stop that is over).
///
/// In the style of AsyncHTTPClient's `RequestBag+StateMachine`: a value with no lock, no
/// clock and no transport, so every phase × input is tested alone
/// (`AttemptStateMachineTests`); ``RequestOperation`` holds it in its locked state and
/// performs the actions (ask for a slot, prepare, publish the phase's event). The phase is
/// assigned here and nowhere else.
///
/// The cycle of one attempt:
///
/// ```
/// pending/waitingToRetry ─begin─▶ intercepting ─intercepted─▶ waitingForSlot ─slotGranted─▶ preparing ─sent─▶ inFlight
///        ▲                         │  ▲  held(batch)             │ ▲  waitingForCircuit          │ slotReturned   │
///        │                         ▼  │  waitingForReactor       ▼ │  waitingForRateLimit        ▼                │
///        └──────────── retryScheduled ◀───────────────────────────────────────────────────────────────────────────┘
///   stoppedAtBreakpoint: after begin (before sending) or in flight (after the answer); finish: from anywhere.
/// ```
struct AttemptStateMachine: Sendable, Equatable {
    private(set) var phase: RequestPhase = .pending
    /// Stopped at a breakpoint after the answer came (else, when stopped, before sending).
    private(set) var stoppedAfterAnswer = false

    enum Input: Equatable {
        /// An attempt begins: the first, a retry when its wait is over, or a requeue.
        case begin(needsAdmission: Bool)
        /// Interceptors and holding reactors let the attempt through: it asks for a slot.
        case intercepted
        /// An interceptor holds the attempt in a batch, until ``released``.
        case hold(batch: String)
        case released
        /// The attempt waits for a reactor's run (before it is sent, or after its answer).
        case waitForReactor(String)
        /// The reactor's run ended well; `beforeSending`: the attempt goes back to its interceptors.
        case reactorFinished(beforeSending: Bool)
        /// The host asked every client to wait until `until` (clock time).
        case rateLimitPause(host: String, until: TimeInterval)
        /// The host's circuit breaker keeps the attempt waiting.
        case circuitWait(host: String)
        /// The breaker's longest wait is over while the attempt still waits for it.
        case circuitWaitExpired
        /// The breaker opened after letting the attempt through: it waits for a slot again.
        case slotReturned
        /// A slot: the attempt prepares its request (`prepares`: a preparer runs first).
        case slotGranted(prepares: Bool)
        /// The request is on the transport.
        case sent
        /// A breakpoint stops the attempt: before it is sent, or after its answer.
        case stopAtBreakpoint(Int, afterAnswer: Bool)
        /// A person let the stopped attempt go on (`needsAdmission` as for ``begin``).
        case resolveBreakpoint(needsAdmission: Bool)
        /// The attempt failed and the next one waits until `until` (clock time).
        case retryScheduled(until: TimeInterval)
        /// The host came back: the next attempt is due sooner, at `until`.
        case retrySooner(until: TimeInterval)
        /// A person skipped the rest of the wait.
        case retryNow
        case finish(RequestOutcome)
    }

    enum Action: Equatable {
        /// The input does not fit the phase: nothing changes and nothing is done.
        case refuse
        /// The phase is what the input says already: nothing to announce again.
        case stay
        /// The phase changed: the operation publishes its event, where it has one.
        case announce
        /// Run the interceptors and holding reactors.
        case admit
        /// Ask the rate-limit pause, the breaker and the gate for a slot.
        case acquireSlot
        /// Run the preparer, then send.
        case prepare
        case send
        /// Go on from a stopped answer to reactors and the retry decision.
        case decide
        /// Begin the next attempt now.
        case beginNext
        /// End the operation as failed: the breaker's wait was too long.
        case failWaitingForCircuit
    }

    /// Where a stopped operation is stopped; nil when it is not.
    var breakpointStage: Breakpoint.Stage? {
        guard case .stoppedAtBreakpoint = phase else { return nil }
        return stoppedAfterAnswer ? .afterResponse : .beforeSend
    }

    var isWaitingToRetry: Bool {
        if case .waitingToRetry = phase { true } else { false }
    }

    var isFinished: Bool {
        if case .finished = phase { true } else { false }
    }

    mutating func apply(_ input: Input) -> Action {
        if isFinished { return .refuse }
        switch input {
        case .begin(let needsAdmission):
            // The first attempt; a retry whose wait is over; a requeue, straight after the
            // answer or after the reactor it waited for.
            switch phase {
            case .pending, .waitingToRetry, .inFlight, .waitingForReactor: return enterAdmission(needsAdmission)
            default: return .refuse
            }
        case .intercepted:
            return move(from: phase == .intercepting, to: .waitingForSlot, then: .acquireSlot)
        case .hold(let batch):
            return move(from: phase == .intercepting, to: .held(batch: batch))
        case .released:
            return move(from: isHeld, to: .intercepting)
        case .waitForReactor(let name):
            let allowed = phase == .intercepting || phase == .inFlight || isWaitingForReactor
            return move(from: allowed, to: .waitingForReactor(name))
        case .reactorFinished(let beforeSending):
            guard isWaitingForReactor else { return .refuse }
            guard beforeSending else { return .stay }
            phase = .intercepting
            return .announce
        case .rateLimitPause(let host, let until):
            guard isAskingForSlot else { return .refuse }
            return change(to: .waitingForRateLimit(host: host, until: until))
        case .circuitWait(let host):
            guard isAskingForSlot else { return .refuse }
            return change(to: .waitingForCircuit(host: host))
        case .circuitWaitExpired:
            guard case .waitingForCircuit = phase else { return .refuse }
            return .failWaitingForCircuit
        case .slotReturned:
            return move(from: isAskingForSlot || phase == .preparing, to: .waitingForSlot, then: .acquireSlot)
        case .slotGranted(let prepares):
            return move(from: isAskingForSlot, to: .preparing, then: prepares ? .prepare : .send)
        case .sent:
            return move(from: phase == .preparing, to: .inFlight)
        case .stopAtBreakpoint(let id, let afterAnswer):
            let allowed = afterAnswer ? phase == .inFlight : (phase == .intercepting || phase == .waitingForSlot)
            guard allowed else { return .refuse }
            stoppedAfterAnswer = afterAnswer
            phase = .stoppedAtBreakpoint(id)
            return .announce
        case .resolveBreakpoint(let needsAdmission):
            guard case .stoppedAtBreakpoint = phase else { return .refuse }
            if stoppedAfterAnswer {
                stoppedAfterAnswer = false
                phase = .inFlight
                return .decide
            }
            return enterAdmission(needsAdmission)
        case .retryScheduled(let until):
            // An attempt ends in flight, in preparation (the preparer threw, the request
            // could not be sent as it is), or after a reactor's run that did not requeue it.
            let allowed = phase == .inFlight || phase == .preparing || isWaitingForReactor
            return move(from: allowed, to: .waitingToRetry(until: until))
        case .retrySooner(let until):
            guard case .waitingToRetry(let due) = phase, until < due else { return .refuse }
            phase = .waitingToRetry(until: until)
            return .announce
        case .retryNow:
            return isWaitingToRetry ? .beginNext : .refuse
        case .finish(let outcome):
            phase = .finished(outcome)
            stoppedAfterAnswer = false
            return .announce
        }
    }

    private mutating func enterAdmission(_ needsAdmission: Bool) -> Action {
        phase = needsAdmission ? .intercepting : .waitingForSlot
        return needsAdmission ? .admit : .acquireSlot
    }

    /// To `next` when `allowed`, saying `then` (by default, to announce it).
    private mutating func move(from allowed: Bool, to next: RequestPhase, then action: Action = .announce) -> Action {
        guard allowed else { return .refuse }
        phase = next
        return action
    }

    /// To `next`, announced only when it is not the phase already (a second pause, a
    /// second wake-up of the breaker that keeps it waiting).
    private mutating func change(to next: RequestPhase) -> Action {
        guard phase != next else { return .stay }
        phase = next
        return .announce
    }

    /// Waiting for a slot, or for the pause or breaker that come before one.
    private var isAskingForSlot: Bool {
        switch phase {
        case .waitingForSlot, .waitingForCircuit, .waitingForRateLimit: true
        default: false
        }
    }

    private var isHeld: Bool {
        if case .held = phase { true } else { false }
    }

    private var isWaitingForReactor: Bool {
        if case .waitingForReactor = phase { true } else { false }
    }
}
