import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// After an attempt: reactors first, then success (parse the body, end) or the retry
/// policy (schedule the next attempt, or end). Early retry shortens a scheduled wait.
extension RequestOperation {
    /// After an attempt: reactors first, then success or the retry policy.
    func attemptCompleted(_ failure: AttemptFailure?, token: UInt64, taskError: TransportError?, askReactors: Bool = true,
                          breakpoints: Bool = true) {
        tellHostGuards(failure, token: token)
        if breakpoints, stopsAfterResponse(failure, token: token, taskError: taskError) { return }
        if askReactors, !options.reactors.isEmpty, let input = ifCurrent(token, { state in
            ReactorInput(operationID: id, request: state.sent ?? state.request, status: state.answer.status,
                         headers: state.answer.headers, failure: failure, attempt: state.attempt)
        }) {
            for reactor in options.reactors {
                let decision = reactor.decide(input)
                guard decision != .ignore else { continue }
                react(decision, reactor: reactor, failure: failure, token: token, taskError: taskError)
                return
            }
        }
        guard let failure else {
            do {
                var answer = state.withLock { $0.answer }
                try parseBody(answer.body) { answer.httpURLResponse() }
            } catch {
                fail(token, .decoding("\(error)"), reason: "cannot decode the response: \(error)")
                return
            }
            end(outcome: .success, error: nil, reason: nil, cancelledBy: nil)
            if let host { environment.recovery?.reportSuccess(host, by: id) }
            return
        }
        attemptFailed(failure, token: token, taskError: taskError)
    }

    /// Tells the host's breaker how the attempt it let through went (once per attempt), and
    /// shows the answer's rate-limit headers to the host's pushback.
    private func tellHostGuards(_ failure: AttemptFailure?, token: UInt64) {
        // One look under the lock: the answer, the attempt's host, and the breaker's pass
        // (taken out, so it is told once).
        guard let (status, headers, host, pass) = ifCurrent(token, { state -> (Int?, [String: String], String?, CircuitPass?) in
            defer { state.current.circuitPass = nil }
            return (state.answer.status, state.answer.headers, state.current.host, state.current.circuitPass)
        }) else { return }
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

    /// Ends the current attempt with `failure` and either schedules the next or ends.
    /// `retryable: false` ends without asking the policy (a request that cannot be sent as
    /// it is would fail the same way every time).
    ///
    /// The retry policy and the host's retry budget are the program's code (they may read the
    /// operation): they are asked outside the lock, between a look at the attempt and the
    /// step that closes it. Nothing else happens to an attempt that failed in between but an
    /// end (a cancel, the deadline); then the verdict is dropped.
    func attemptFailed(_ failure: AttemptFailure, token: UInt64, taskError: TransportError?, retryable: Bool = true) {
        let now = environment.clock.now()
        // Read before the operation's lock is taken (`host` takes it).
        let budgetHost = environment.retryBudget == nil ? nil : host?.description
        let judge = RetryJudge(policy: options.retryPolicy, budget: environment.retryBudget, deadline: options.deadline)
        guard let input = ifCurrent(token, { state in
            RetryJudge.Input(failure: failure, retryable: retryable, context: retryContext(after: failure, state: state, now: now),
                             attempt: state.attempt, now: now, startedAt: state.startedAt, host: budgetHost, taskError: taskError,
                             handedOver: state.current.streaming)
        }) else { return }
        let verdict = judge.judge(input)
        if let host = verdict.askedBudget, let budget = environment.retryBudget { publishBudget(budget, host: host) }
        let outcome = ifCurrent(token) { state -> (Teardown, ScheduledRetry?) in
            // With hedges, the attempt that failed need not be the newest one.
            let failedRecord = state.current.leadRecord ?? state.records.count - 1
            let failed = state.records[failedRecord].number
            var teardown = closeAttempt(&state, failure: failure, at: now)
            if case .preparation(let reason) = failure {
                publish(&state, .preparationFailed(reason: reason), attempt: failed)
            }
            if let refusal = verdict.budgetRefusal { publish(&state, .retryDenied(reason: refusal), attempt: failed) }
            state.records[failedRecord].decision = verdict.reason
            switch verdict.next {
            case .stop(let reason, let error):
                teardown.merge(endLocked(&state, outcome: .failure, error: error, reason: reason, cancelledBy: nil))
                return (teardown, nil)
            case .retry(let delay, let reason, let fromServer):
                guard state.machine.apply(.retryScheduled(until: now + delay)) == .announce else {
                    // An attempt ended in a phase no attempt ends in: a defect, caught by the
                    // tests' assertion; in a release build the operation ends rather than hang.
                    assertionFailure("an attempt failed in phase \(state.phase)")
                    teardown.merge(endLocked(&state, outcome: .failure, error: RequestError.Reason(failure), reason: verdict.reason, cancelledBy: nil))
                    return (teardown, nil)
                }
                state.records[failedRecord].retryDelay = delay
                state.lastDelay = delay
                state.attempt += 1
                publish(&state, .retryScheduled(delay: delay, reason: reason), attempt: failed)
                return (teardown, ScheduledRetry(until: now + delay, fromServer: fromServer, failure: failure))
            }
        }
        guard let (teardown, retry) = outcome else { return }
        tearDown(teardown)
        if let retry { scheduleRetry(retry, token: token) }
    }

    /// What the host's retry budget still allows, as a host-level event (the Hosts view's
    /// BUDGET column), after a retry or a hedge asked it.
    func publishBudget(_ budget: RetryBudget, host: String) {
        guard let left = budget.retriesLeft(on: host) else { return }
        environment.events.publish(operation: "", attempt: 0, .retryBudget(host: host, left: left))
    }

    /// What the retry policy is asked with after `failure`.
    private func retryContext(after failure: AttemptFailure, state: State, now: TimeInterval) -> RetryContext {
        RetryContext(method: state.request.httpMethod ?? "GET", headers: state.request.allHTTPHeaderFields ?? [:],
                     attempt: state.attempt - state.requeues, failure: failure,
                     elapsed: now - (state.firstAttemptAt ?? now), previousDelay: state.lastDelay,
                     wallClockNow: Date(), random: environment.random)
    }

    private struct ScheduledRetry {
        /// When the next attempt is due: the time the phase shows, not "delay from whenever
        /// the timer gets made" (a clock that moved in between would push it back).
        var until: TimeInterval
        var fromServer: Bool
        var failure: AttemptFailure
    }

    /// Starts the backoff timer and, where early retry applies, watches the host.
    private func scheduleRetry(_ retry: ScheduledRetry, token: UInt64) {
        let clock = environment.clock
        let timer = clock.schedule(at: retry.until) { [weak self] in self?.retryDue(token: token) }
        var observation: RecoveryObservation?
        if let recovery = environment.recovery, let host {
            // Another request's success says the host is reachable again: that cures a failure
            // to reach it, never an answer that said "slow down" (429, 503, Retry-After), nor
            // any other status the host chose to send.
            let onSuccess = options.earlyRetryOnHostSuccess && !retry.fromServer && retry.failure.isTransportFailure
            let probe = options.earlyRetryOnProbe && retry.failure.isConnectivityFailure
            if onSuccess || probe {
                observation = recovery.observe(host, onSuccess: onSuccess, probe: probe) { [weak self] trigger, delay in
                    self?.hostRecovered(trigger: trigger, delay: delay, token: token)
                }
            }
        }
        let kept = ifCurrent(token) { state -> Bool? in
            guard state.machine.isWaitingToRetry else { return nil }
            state.retryTimer = timer
            state.observation = observation
            return true
        } ?? false
        if !kept {
            timer.cancel()
            observation?.cancel()
        }
    }

    private func retryDue(token: UInt64) {
        beginAttempt(ifCurrent: token)
    }

    /// Early retry: the host answered another request, or a probe saw it come back.
    func hostRecovered(trigger: String, delay: TimeInterval, token: UInt64) {
        let clock = environment.clock
        /// The timer the early one replaces.
        struct Replaced { let old: ScheduledTimer? }
        let replaced = ifCurrent(token) { state -> Replaced? in
            let now = clock.now()
            guard state.machine.apply(.retrySooner(until: now + delay)) == .announce else { return nil }
            state.observation = nil
            publish(&state, .earlyRetry(trigger: trigger, delay: delay))
            let old = state.retryTimer
            state.retryTimer = clock.schedule(at: now + delay) { [weak self] in self?.retryDue(token: token) }
            return Replaced(old: old)
        }
        replaced?.old?.cancel()
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
