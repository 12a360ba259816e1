import Foundation

/// What the stages of ``AttemptStateMachine`` hold, and ``Teardown``: what a transition lets
/// go of, undone by the operation once it has left its lock.
///
/// A handle lives in the stage that uses it and nowhere else (a gate ticket while the attempt
/// asks for a slot, the task and its timers while it is in flight, the backoff's timer while
/// it waits to retry), so leaving the stage is letting go of it: nothing is reset field by
/// field, and a late timer or callback finds no stage that holds it.
extension AttemptStateMachine {
    typealias Work = Task<Void, Never>

    /// What an attempt in admission waits for: its interceptors, a batch, a reactor's run.
    enum AdmissionWait: Equatable {
        case interceptors
        case held(batch: String)
        case reactor(String)
    }

    /// Interceptors and reactors that hold new requests run in `work` (nil until it started).
    struct Admitting {
        var wait: AdmissionWait = .interceptors
        var work: Work?
    }

    /// What an attempt that asks for a slot waits for right now.
    enum SlotWait: Equatable {
        case slot
        case rateLimit(host: String, until: TimeInterval)
        case circuit(host: String)
    }

    /// Asking the host's rate-limit pause, its circuit breaker and the gate, in that order.
    struct Asking {
        var wait: SlotWait = .slot
        /// Waiting in the gate for a slot.
        var ticket: ConcurrencyGate.Ticket?
        /// What the host's breaker let through (told how the attempt went).
        var pass: CircuitPass?
        var circuitWait: CircuitWait?
        /// Ends the wait for the breaker at its ``CircuitBreaker/maxWait``: set at the first
        /// wait, kept through the next ones.
        var circuitTimer: ScheduledTimer?
        /// Ends the wait for the host's rate-limit pause.
        var rateLimitTimer: ScheduledTimer?
    }

    /// A slot from the gate, given back when the attempt is over, and the breaker's pass.
    struct Granted {
        /// The host whose per-host slot the attempt took (nil: no per-host limit).
        var slotHost: String?
        var pass: CircuitPass?
    }

    /// How an attempt's task ended: what the retry policy judges (nil: success) and the error
    /// its event reported.
    struct AttemptEnd: Equatable {
        var failure: AttemptFailure?
        var taskError: TransportError?
        /// Part of the body had gone to the caller's stream (the attempt is committed).
        var handedOver = false
        /// The record of the attempt that ended (a hedge that led), nil: the last record.
        var leadRecord: Int?
    }

    /// Where a breakpoint stopped the attempt.
    enum StoppedAt: Equatable {
        case beforeSending
        /// After the answer: how the attempt ended, to go on with once a person lets it.
        case afterAnswer(AttemptEnd)
    }
}

/// What to undo after leaving the lock: side effects never run while holding it. Made by
/// the machine from the stage a transition left (``AttemptStateMachine``), and by the
/// operation for what outlives attempts (the deadline, a partial download).
struct Teardown {
    var timers: [ScheduledTimer] = []
    var observation: RecoveryObservation?
    /// Tasks the transport runs: cancelled.
    var tasks: [TransportTask] = []
    /// A task made and never resumed (its attempt ended first): discarded.
    var unsent: TransportTask?
    /// Interceptors, a preparer, a reactor's wait.
    var work: [Task<Void, Never>] = []
    var ticket: ConcurrencyGate.Ticket?
    var releasesSlot = false
    /// The host whose per-host slot is given back with the slot.
    var slotHost: String?
    /// A pass not yet told how its attempt went (cancelled, never sent) goes back.
    var pass: CircuitPass?
    var circuitWait: CircuitWait?
    /// A download begun by an operation that ended: removed.
    var partial: ResponseFile?
    var result: RequestResult?

    /// A flight's timers: those set.
    init(timers: AttemptTimers) {
        self.init(timer: timers.attempt, timers.read)
        if let hedge = timers.hedge { self.timers.append(hedge) }
    }

    init() {}

    /// One or two timers, each when set. Not an array literal: the compiler put that on the
    /// stack only while the initialiser was inlined, and a change elsewhere made it a heap
    /// array again, two mallocs a request (#58); here nothing is made when neither is set.
    init(timer: ScheduledTimer?, _ other: ScheduledTimer? = nil) {
        if let timer { timers.append(timer) }
        if let other { timers.append(other) }
    }

    var isEmpty: Bool {
        timers.isEmpty && observation == nil && tasks.isEmpty && unsent == nil && work.isEmpty && ticket == nil
            && !releasesSlot && pass == nil && circuitWait == nil && partial == nil && result == nil
    }

    mutating func merge(_ other: Teardown) {
        // The other's arrays are taken whole when these are empty (the usual case): shared,
        // not copied into new ones.
        Self.append(other.timers, to: &timers)
        observation = observation ?? other.observation
        Self.append(other.tasks, to: &tasks)
        unsent = unsent ?? other.unsent
        Self.append(other.work, to: &work)
        ticket = ticket ?? other.ticket
        if other.releasesSlot { (releasesSlot, slotHost) = (true, other.slotHost) }
        pass = pass ?? other.pass
        circuitWait = circuitWait ?? other.circuitWait
        partial = partial ?? other.partial
        result = result ?? other.result
    }

    private static func append<Element>(_ more: [Element], to list: inout [Element]) {
        if list.isEmpty { list = more } else if !more.isEmpty { list += more }
    }

    mutating func release(_ granted: AttemptStateMachine.Granted?) {
        guard let granted else { return }
        (releasesSlot, slotHost) = (true, granted.slotHost)
        pass = pass ?? granted.pass
    }

    /// `cancel`: how the operation cancels tasks (``RequestOperation/cancelTasks(_:)``).
    func perform(cancel: ([TransportTask]) -> Void, discard: (TransportTask) -> Void, gate: ConcurrencyGate?) {
        timers.forEach { $0.cancel() }
        observation?.cancel()
        cancel(tasks)
        if let unsent { discard(unsent) }
        work.forEach { $0.cancel() }
        circuitWait?.cancel()
        pass?.giveBack()
        if let ticket, let gate {
            // A waiter already granted holds a slot; its grant sees the end and releases it.
            _ = gate.withdraw(ticket)
        }
        if releasesSlot { gate?.release(host: slotHost) }
        partial?.discard()
    }
}
