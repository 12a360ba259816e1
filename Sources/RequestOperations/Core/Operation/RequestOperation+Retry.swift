import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// After an attempt: reactors first, then success (parse the body, end) or the retry
/// policy (schedule the next attempt, or end). Early retry shortens a scheduled wait.
extension RequestOperation {
    /// After an attempt: reactors first, then success or the retry policy.
    func attemptCompleted(_ end: AttemptEnd, id: AttemptID, askReactors: Bool = true, breakpoints: Bool = true) {
        assertOutsideTransition()
        tellHostGuards(end.failure, id: id)
        if breakpoints, stopsAfterResponse(end, id: id) { return }
        if askReactors, !options.reactors.isEmpty, let input = look({ state -> ReactorInput? in
            guard state.machine.deciding(of: id) != nil else { return nil }
            return ReactorInput(operationID: self.id, request: (state.sent ?? state.request).foundationHead, status: state.answer.status,
                                headers: state.answer.headers, failure: end.failure, attempt: state.attempt)
        }) {
            for reactor in options.reactors {
                let decision = reactor.decide(input)
                guard decision != .ignore else { continue }
                react(decision, reactor: reactor, end: end, id: id)
                return
            }
        }
        guard let failure = end.failure else {
            do {
                var answer = look { $0.answer }
                try parseBody(answer.body) { answer.httpURLResponse() }
            } catch {
                fail(id, .decoding("\(error)"), reason: "cannot decode the response: \(error)")
                return
            }
            self.end(outcome: .success, error: nil, reason: nil, cancelledBy: nil)
            if let host { environment.recovery?.reportSuccess(host, by: self.id) }
            return
        }
        attemptFailed(failure, id: id, taskError: end.taskError, handedOver: end.handedOver)
    }

    /// Tells the host's breaker how the attempt it let through went (once per attempt), and
    /// shows the answer's rate-limit headers to the host's pushback.
    private func tellHostGuards(_ failure: AttemptFailure?, id: AttemptID) {
        // One look under the lock: the answer, the attempt's host, and the breaker's pass
        // (taken out, so it is told once).
        guard let (status, headers, host, pass) = transition(HostGuardsTold(withHost: environment.rateLimits != nil, id: id)) else { return }
        if let limits = environment.rateLimits, let status, let host {
            // Only headers that could be Retry-After, RateLimit* or X-RateLimit* are looked at,
            // once: most answers have none, and then nothing more is done.
            var candidates: [String: String] = [:]
            for (name, value) in headers {
                guard let first = name.utf8.first, first | 0x20 == UInt8(ascii: "r") || first | 0x20 == UInt8(ascii: "x") else { continue }
                candidates[name.lowercased()] = value
            }
            if !candidates.isEmpty {
                limits.observe(host, status: status) { candidates[$0.lowercased()] }
            }
        }
        guard let pass else { return }
        if let verdict = CircuitVerdict.judging(status: status, failure: failure) {
            pass.record(verdict)
        } else {
            pass.giveBack()
        }
    }

    /// What the host's guards are told of attempt `id` that is deciding: its answer, its host
    /// (`withHost`) and the breaker's pass, taken out so it is told once.
    struct HostGuardsTold: OperationTransition {
        let withHost: Bool
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> (Int?, [String: String], String?, CircuitPass?)? {
            guard state.machine.deciding(of: id) != nil else { return nil }
            let host = withHost ? state.attemptHost() : nil
            return (state.answer.status, state.answer.headers, host, state.machine.takePass(of: id))
        }
    }

    /// Ends the current attempt with `failure` and either schedules the next or ends.
    /// `retryable: false` ends without asking the policy (a request that cannot be sent as
    /// it is would fail the same way every time).
    ///
    /// The retry policy and the host's retry budget are the program's code (they may read the
    /// operation): they are asked outside the lock, between a look at the attempt and the
    /// step that closes it. Nothing else happens to an attempt that failed in between but an
    /// end (a cancel, the deadline); then the verdict is dropped.
    func attemptFailed(_ failure: AttemptFailure, id: AttemptID, taskError: TransportError?, retryable: Bool = true, handedOver: Bool = false) {
        let now = environment.now()
        // Read before the operation's lock is taken (`host` takes it).
        let budgetHost = environment.retryBudget == nil ? nil : host?.description
        let judge = RetryJudge(policy: options.retryPolicy, budget: environment.retryBudget, deadline: options.deadline)
        guard let input = look({ state -> RetryJudge.Input? in
            guard state.machine.canClose(id) else { return nil }
            return RetryJudge.Input(failure: failure, retryable: retryable, context: retryContext(after: failure, state: state, now: now),
                                    attempt: state.attempt, now: now, startedAt: state.startedAt, host: budgetHost, taskError: taskError,
                                    handedOver: handedOver)
        }) else { return }
        assertOutsideTransition()
        let verdict = judge.judge(input)
        if let host = verdict.askedBudget, let budget = environment.retryBudget { publishBudget(budget, host: host) }
        guard let closed = transition(AttemptClosed(failure: failure, verdict: verdict, at: now, id: id)) else { return }
        tearDown(closed)
        if case .retry(let delay, _, let fromServer) = verdict.next {
            startRetryWait(until: now + delay, fromServer: fromServer, failure: failure, id: id)
        }
    }

    /// Attempt `id` failed with `failure` and is closed as the retry policy's `verdict` says:
    /// the next is scheduled, or the operation ends (nil: it ended meanwhile).
    struct AttemptClosed: OperationTransition {
        let failure: AttemptFailure
        let verdict: RetryJudge.Verdict
        let at: TimeInterval
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Teardown? {
            guard state.machine.canClose(id) else { return nil }
            // With hedges, the attempt that failed need not be the newest one.
            let failedRecord = state.machine.leadRecord ?? state.records.count - 1
            let failed = state.records[failedRecord].number
            var racers = Teardown()
            racers.tasks = operation.closeRecord(&state, failure: failure, at: at)
            if case .preparation(let reason) = failure {
                operation.publish(&state, .preparationFailed(reason: reason), attempt: failed)
            }
            if let refusal = verdict.budgetRefusal { operation.publish(&state, .retryDenied(reason: refusal), attempt: failed) }
            state.records[failedRecord].decision = verdict.reason
            switch verdict.next {
            case .stop(let reason, let error):
                racers.merge(operation.endLocked(&state, outcome: .failure, error: error, reason: reason, cancelledBy: nil))
                return racers
            case .retry(let delay, let reason, _):
                guard let left = state.machine.retryScheduled(until: at + delay, of: id) else { return nil }
                racers.merge(left)
                state.records[failedRecord].retryDelay = delay
                state.lastDelay = delay
                operation.publish(&state, .retryScheduled(delay: delay, reason: reason), attempt: failed)
                return racers
            }
        }
    }

    /// What the host's retry budget still allows, as a host-level event (the Hosts view's
    /// BUDGET column), after a retry or a hedge asked it.
    func publishBudget(_ budget: RetryBudget, host: String) {
        guard let left = budget.retriesLeft(on: host) else { return }
        environment.events.publish(operation: "", attempt: 0, .retryBudget(host: host, left: left))
    }

    /// What the retry policy is asked with after `failure`.
    private func retryContext(after failure: AttemptFailure, state: State, now: TimeInterval) -> RetryContext {
        RetryContext(method: state.request.method, headers: state.request.headerDictionary,
                     attempt: state.attempt - state.machine.requeues, failure: failure,
                     elapsed: now - (state.firstAttemptAt ?? now), previousDelay: state.lastDelay,
                     wallClockNow: Date(), random: environment.random)
    }

    /// Starts the backoff's timer (due `until`: the time the phase shows, not "delay from
    /// whenever the timer gets made") and, where early retry applies, watches the host.
    private func startRetryWait(until: TimeInterval, fromServer: Bool, failure: AttemptFailure, id: AttemptID) {
        let timer = environment.clock.schedule(at: until) { [weak self] in self?.beginAttempt(expected: id) }
        var observation: RecoveryObservation?
        if let recovery = environment.recovery, let host {
            // Another request's success says the host is reachable again: that cures a failure
            // to reach it, never an answer that said "slow down" (429, 503, Retry-After), nor
            // any other status the host chose to send.
            let onSuccess = options.earlyRetryOnHostSuccess && !fromServer && failure.isTransportFailure
            let probe = options.earlyRetryOnProbe && failure.isConnectivityFailure
            if onSuccess || probe {
                observation = recovery.observe(host, onSuccess: onSuccess, probe: probe) { [weak self] trigger, delay in
                    self?.hostRecovered(trigger: trigger, delay: delay, id: id)
                }
            }
        }
        tearDown(transition(RetryWaitStarted(timer: timer, observation: observation, id: id)))
    }

    /// ``AttemptStateMachine/retryWaitStarted(timer:observation:of:)``.
    struct RetryWaitStarted: OperationTransition {
        let timer: ScheduledTimer
        let observation: RecoveryObservation?
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Teardown {
            state.machine.retryWaitStarted(timer: timer, observation: observation, of: id)
        }
    }

    /// Early retry: the host answered another request, or a probe saw it come back.
    func hostRecovered(trigger: String, delay: TimeInterval, id: AttemptID) {
        let clock = environment.clock
        let now = clock.now()
        guard let replaced = transition(RetrySooner(trigger: trigger, delay: delay, at: now, id: id)) else { return }
        tearDown(replaced)
        let timer = clock.schedule(at: now + delay) { [weak self] in self?.beginAttempt(expected: id) }
        tearDown(transition(RetryWaitStarted(timer: timer, observation: nil, id: id)))
    }

    /// The host came back: attempt `id` waits `delay` from `at` instead, said as an early
    /// retry (``AttemptStateMachine/retrySooner(until:of:)``).
    struct RetrySooner: OperationTransition {
        let trigger: String
        let delay: TimeInterval
        let at: TimeInterval
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Teardown? {
            guard let replaced = state.machine.retrySooner(until: at + delay, of: id) else { return nil }
            operation.publish(&state, .earlyRetry(trigger: trigger, delay: delay))
            return replaced
        }
    }
}

extension AttemptFailure {
    /// No answer came (the connection failed, was lost or timed out).
    var isTransportFailure: Bool {
        if case .transport = self { return true }
        return false
    }

    /// The host could not be reached at all: worth probing for its return.
    var isConnectivityFailure: Bool {
        guard case .transport(let code) = self else { return false }
        return [.cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet].contains(code)
    }
}
