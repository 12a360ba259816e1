import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Hedged reads (``HedgePolicy``): copies of the attempt's request sent while it waits for
/// a response, each a new attempt. The attempt's task is its *lead*; hedges in flight are
/// *racers* (``AttemptState/racers``). The first response makes its task the lead and
/// cancels the rest; a lead that fails before any response hands the lead to a racer.
/// Everything else about the attempt (slot, breaker pass, timeout, validation) is shared.
extension RequestOperation {
    /// Called once the attempt's task is on the transport: arms the first hedge's timer
    /// when the options ask for hedging and the request may be sent twice.
    func armHedge(_ state: inout State, token: UInt64, request: URLRequest) {
        guard let policy = options.hedge, policy.max > 0, HedgePolicy.allows(request) else { return }
        let clock = environment.clock
        state.current.hedgeTimer = clock.schedule(at: clock.now() + policy.after) { [weak self] in self?.hedgeDue(token) }
    }

    /// The hedge delay passed: sends a copy of the request unless a response came, the
    /// host is in trouble (breaker not closed, rate-limit pause), the attempt limit is
    /// reached, or the retry budget says no.
    private func hedgeDue(_ token: UInt64) {
        guard let policy = options.hedge else { return }
        let wanted = ifCurrent(token) { state -> (URLRequest, String?, Int)? in
            state.current.hedgeTimer = nil
            guard hedgeWanted(state, policy: policy), let sent = state.sent else { return nil }
            return (sent, state.current.host ?? state.hostKey(of: sent.url)?.description, state.attempt + 1)
        }
        guard let (sent, host, number) = wanted else { return }
        if let host {
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
        let request = instrumented(sent, attempt: number)
        let task = transport.makeTask(for: request, handler: AttemptCallbacks(self))
        let resumed = ifCurrent(token) { state -> Bool? in
            guard hedgeWanted(state, policy: policy), state.attempt + 1 == number else { return nil }
            let now = clock.now()
            let lead = state.current.leadRecord ?? state.records.count - 1
            state.current.leadRecord = lead
            state.attempt += 1
            var record = AttemptRecord(number: state.attempt, queuedAt: now)
            record.startedAt = now
            record.sentAt = now
            state.records.append(record)
            state.current.racers.append(Racer(task: task, record: state.records.count - 1))
            let waited = now - (state.records[lead].sentAt ?? now)
            publish(&state, .hedged(racing: state.records[lead].number, after: waited), attempt: state.attempt)
            publish(&state, .taskCreated(taskIdentifier: task.identifier, url: request.url?.absoluteString ?? "",
                                            insecure: !environment.transport.verifiesCertificates), attempt: state.attempt)
            if state.current.racers.count < policy.max {
                state.current.hedgeTimer = clock.schedule(at: now + policy.after) { [weak self] in self?.hedgeDue(token) }
            }
            // Resumed outside the lock, as the lead is: a concurrent end that cancels the racer
            // meanwhile waits for the resume (`unresumed`).
            state.unresumed.insert(task.identifier)
            return true
        }
        guard resumed != nil else { return transport.discard(task) }
        resumeOutsideLock(task)
    }

    /// The attempt is still waiting for its first response and has room for another copy.
    private func hedgeWanted(_ state: State, policy: HedgePolicy) -> Bool {
        guard state.phase == .inFlight, state.current.task != nil, state.answer.status == nil, !state.current.timedOut,
              state.current.racers.count < policy.max else { return false }
        if let limit = options.retryPolicy.attemptLimit, state.attempt >= limit { return false }
        return true
    }

    /// A response arrived on `task`: if hedges were sent, it wins. A racer becomes the
    /// lead; every other copy is closed. Returns what to cancel, nil when there was no race.
    func settleHedges(_ state: inout State, answeredBy task: Int, at now: TimeInterval) -> Teardown? {
        guard state.current.hedgeTimer != nil || !state.current.racers.isEmpty else { return nil }
        var teardown = Teardown()
        if let timer = state.current.hedgeTimer { teardown.timers.append(timer) }
        state.current.hedgeTimer = nil
        if let racer = state.racer(task) {
            let winner = state.current.racers.remove(at: racer)
            let lost = TransportError.hedgeLost(to: state.records[winner.record].number)
            if let lead = state.current.task, let leadRecord = state.current.leadRecord {
                endCopy(&state, record: leadRecord, error: lost, at: now)
                teardown.racers.append(lead)
            }
            state.current.task = winner.task
            state.current.leadRecord = winner.record
            teardown.racers += closeRacers(&state, at: now, error: lost)
        } else if state.isCurrent(task: task) {
            teardown.racers += closeRacers(&state, at: now, error: .hedgeLost(to: state.leadAttempt))
        } else {
            return nil
        }
        return teardown
    }

    /// Ends every racing hedge's part (its record and its `taskCompleted` with `error`) and
    /// takes them out of the attempt; their tasks are returned for cancelling.
    func closeRacers(_ state: inout State, at now: TimeInterval, error: TransportError) -> [TransportTask] {
        let racers = state.current.racers
        state.current.racers = []
        for racer in racers { endCopy(&state, record: racer.record, error: error, at: now) }
        return racers.map(\.task)
    }

    /// A racing hedge failed before any response (could not connect, lost its connection):
    /// recorded and published; the lead and the other racers go on.
    func hedgeFailed(_ state: inout State, racer: Int, failure: AttemptFailure?, reported: TransportError?) {
        let record = state.current.racers.remove(at: racer).record
        state.records[record].endedAt = environment.clock.now()
        state.records[record].failure = failure
        state.records[record].decision = "hedge failed; the attempt it raced goes on"
        publish(&state, .taskCompleted(error: reported), attempt: state.records[record].number)
    }

    /// The lead failed before any response while hedges race it: its failure is recorded and
    /// the oldest racer leads. The retry policy is asked only when the last copy fails.
    func leadFailedWhileHedged(_ state: inout State, failure: AttemptFailure?, reported: TransportError?) {
        state.record.endedAt = environment.clock.now()
        state.record.failure = failure
        state.record.decision = "failed; its hedge goes on"
        publish(&state, .taskCompleted(error: reported))
        let next = state.current.racers.removeFirst()
        state.current.task = next.task
        state.current.leadRecord = next.record
    }

    /// Closes one copy that lost the race or outlived its attempt.
    private func endCopy(_ state: inout State, record: Int, error: TransportError, at now: TimeInterval) {
        state.records[record].endedAt = now
        state.records[record].failure = .transport(URLError.Code(rawValue: error.code) ?? .cancelled)
        state.records[record].decision = error.message
        publish(&state, .taskCompleted(error: error), attempt: state.records[record].number)
    }
}
