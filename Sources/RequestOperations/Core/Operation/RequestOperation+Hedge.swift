import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Hedged reads (``HedgePolicy``): copies of the attempt's request sent while it waits for
/// a response, each a new attempt. The attempt's task is its *lead*; hedges in flight are
/// *racers* (``AttemptStateMachine/InFlight/racers``). The first response makes its task the lead and
/// cancels the rest; a lead that fails before any response hands the lead to a racer.
/// Everything else about the attempt (slot, breaker pass, timeout, validation) is shared.
extension RequestOperation {
    /// The first hedge's timer for an attempt about to be sent, when the options ask for
    /// hedging and the request may be sent twice.
    func hedgeTimer(for request: RequestMessage, id: AttemptID, from now: TimeInterval) -> ScheduledTimer? {
        guard let policy = options.hedge, policy.max > 0, HedgePolicy.allows(request) else { return nil }
        return environment.clock.schedule(at: now + policy.after) { [weak self] in self?.hedgeDue(id) }
    }

    /// The hedge delay passed: sends a copy of the request unless a response came, the
    /// host is in trouble (breaker not closed, rate-limit pause), the attempt limit is
    /// reached, or the retry budget says no.
    private func hedgeDue(_ id: AttemptID) {
        guard let policy = options.hedge else { return }
        guard let wanted = transition(HedgeDue(policy: policy, id: id)) else { return }
        if let host = wanted.host {
            if let breaker = environment.circuitBreaker, !breaker.isClosed(host) { return }
            if let limits = environment.rateLimits, limits.waitUntil(host) != nil { return }
            // A hedge is one more request to a host that may be slow because it is
            // overloaded: it is paid for like a retry.
            if let budget = environment.retryBudget {
                let refusal = budget.spendRetry(on: host)
                publishBudget(budget, host: host)
                if refusal != nil { return }
            }
        }
        let transport = environment.transport, clock = environment.clock
        // The copy is an attempt of its own to the instruments too (a span, its traceparent).
        let request = instrumented(wanted.sent, attempt: wanted.number)
        let task = transport.makeTask(for: request, handler: AttemptCallbacks(self))
        let now = clock.now()
        let next = wanted.more ? clock.schedule(at: now + policy.after) { [weak self] in self?.hedgeDue(id) } : nil
        let sent = transition(HedgeSent(task: task, request: request, number: wanted.number, nextTimer: next, policy: policy,
                                        insecure: !transport.verifiesCertificates, at: now, id: id))
        guard sent else {
            next?.cancel()
            return transport.discard(task)
        }
        resumeOutsideLock(task)
    }

    /// The hedge timer of attempt `id` fired: the copy to send, if one is wanted (its host,
    /// its number, and whether another may follow it).
    struct HedgeDue: OperationTransition {
        let policy: HedgePolicy
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> (sent: RequestMessage, host: String?, number: Int, more: Bool)? {
            guard let racing = state.machine.hedgeDue(of: id), operation.hedgeWanted(state, racing: racing, policy: policy), let sent = state.sent else { return nil }
            return (sent, state.hostKey(of: sent.url)?.description, state.attempt + 1, racing + 1 < policy.max)
        }
    }

    /// A hedge of attempt `id` is on the transport as `task`, attempt `number` (false: no
    /// longer wanted; the caller discards the task and cancels `nextTimer`).
    struct HedgeSent: OperationTransition {
        let task: TransportTask
        let request: RequestMessage
        let number: Int
        let nextTimer: ScheduledTimer?
        let policy: HedgePolicy
        let insecure: Bool
        let at: TimeInterval
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Bool {
            guard let racing = state.machine.racing(of: id), operation.hedgeWanted(state, racing: racing, policy: policy), state.attempt + 1 == number else { return false }
            let lead = state.machine.leadRecord ?? state.records.count - 1
            var record = AttemptRecord(number: number, queuedAt: at)
            record.startedAt = at
            record.sentAt = at
            state.records.append(record)
            guard let racer = state.machine.hedgeSent(task, record: state.records.count - 1, lead: lead, nextTimer: nextTimer, of: id) else {
                state.records.removeLast()
                return false
            }
            let waited = at - (state.records[lead].sentAt ?? at)
            operation.publish(&state, .hedged(racing: state.records[lead].number, after: waited), attempt: racer)
            operation.publish(&state, .taskCreated(taskIdentifier: task.identifier, url: request.url.absoluteString, insecure: insecure),
                              attempt: racer)
            // Resumed outside the lock, as the lead is: a concurrent end that cancels the racer
            // meanwhile waits for the resume (`resuming`).
            state.resuming[task.identifier] = .resuming
            return true
        }
    }

    /// The attempt in flight (with `racing` hedges) is still waiting for its first response
    /// and has room for another copy.
    func hedgeWanted(_ state: State, racing: Int, policy: HedgePolicy) -> Bool {
        guard state.answer.status == nil, racing < policy.max else { return false }
        if let limit = options.retryPolicy.attemptLimit, state.attempt >= limit { return false }
        return true
    }

    /// A response arrived on `task`: if hedges were sent, it wins. A racer becomes the
    /// lead; every other copy is closed. Returns what to cancel, nil when there was no race.
    func settleHedges(_ state: inout State, answeredBy task: Int, at now: TimeInterval) -> Teardown? {
        guard let (losers, timer) = state.machine.settleRace(answeredBy: task) else { return nil }
        let lost = TransportError.hedgeLost(to: state.leadAttempt)
        for loser in losers { endCopy(&state, record: loser.record, error: lost, at: now) }
        var teardown = Teardown(timer: timer)
        teardown.tasks = losers.map(\.task)
        return teardown
    }

    /// Ends every racing hedge's part (its record and its `taskCompleted` with `error`) and
    /// takes them out of the attempt; their tasks are returned for cancelling.
    func closeRacers(_ state: inout State, at now: TimeInterval, error: TransportError) -> [TransportTask] {
        let racers = state.machine.takeRacers()
        for racer in racers { endCopy(&state, record: racer.record, error: error, at: now) }
        return racers.map(\.task)
    }

    /// A racing hedge failed before any response (could not connect, lost its connection):
    /// recorded and published; the lead and the other racers go on.
    func hedgeFailed(_ state: inout State, racer: Int, failure: AttemptFailure?, reported: TransportError?) {
        guard let record = state.machine.removeRacer(at: racer)?.record else { return }
        state.records[record].endedAt = environment.now()
        state.records[record].failure = failure
        state.records[record].decision = "hedge failed; the attempt it raced goes on"
        publish(&state, .taskCompleted(error: reported), attempt: state.records[record].number)
    }

    /// The lead failed before any response while hedges race it: its failure is recorded and
    /// the oldest racer leads. The retry policy is asked only when the last copy fails.
    func leadFailedWhileHedged(_ state: inout State, failure: AttemptFailure?, reported: TransportError?) {
        state.record.endedAt = environment.now()
        state.record.failure = failure
        state.record.decision = "failed; its hedge goes on"
        publish(&state, .taskCompleted(error: reported))
        state.machine.promoteRacer()
    }

    /// Closes one copy that lost the race or outlived its attempt.
    private func endCopy(_ state: inout State, record: Int, error: TransportError, at now: TimeInterval) {
        state.records[record].endedAt = now
        state.records[record].failure = .transport(URLError.Code(rawValue: error.code) ?? .cancelled)
        state.records[record].decision = error.message
        publish(&state, .taskCompleted(error: error), attempt: state.records[record].number)
    }
}
