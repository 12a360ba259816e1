import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One attempt, from its start to the moment its request is on the transport: admission
/// (see +FlowControl), a slot from the gate, the preparer, then ``send(_:token:)`` — the one
/// place a request is handed to the ``RequestTransport``. What the transport reports comes
/// back in RequestOperation+TransportCallbacks.swift.
extension RequestOperation {
    /// Begins the next attempt: asks for admission (when interceptors or holding reactors
    /// exist) or straight for a slot. With `expected`, only if no other path (timer, early
    /// retry, retryNow) has begun the attempt first. `reintercept: false` sends the request
    /// the interceptors made for the last attempt.
    func beginAttempt(ifCurrent expected: UInt64? = nil, reintercept: Bool = true) {
        let needsAdmission = !options.interceptors.isEmpty || options.reactors.contains { $0.options.holdNewRequests }
        let begun = state.withLock { state -> (UInt64, Teardown, AttemptStateMachine.Action)? in
            guard state.result == nil else { return nil }
            if let expected, state.token != expected { return nil }
            let next = state.machine.apply(.begin(needsAdmission: needsAdmission))
            // The last attempt was closed already; anything it still held is undone here.
            var teardown = Teardown(closing: state.current)
            teardown.merge(Teardown(timers: [state.retryTimer], observation: state.observation))
            state.token += 1
            state.current = AttemptState()
            state.retryTimer = nil
            state.observation = nil
            if reintercept { state.outgoing = nil }
            state.records.append(AttemptRecord(number: state.attempt, queuedAt: environment.clock.now()))
            return (state.token, teardown, next)
        }
        guard let (token, teardown, next) = begun else { return }
        tearDown(teardown)
        if stopsAtBreakpoint(token) { return }
        proceed(token, next)
    }

    /// On from the attempt's start, as the state machine said: admission (interceptors,
    /// holding reactors), or straight to a slot.
    func proceed(_ token: UInt64, _ next: AttemptStateMachine.Action) {
        switch next {
        case .admit: keep(Task { [self] in await admit(token) }, ifCurrent: token) { $0.waiting = $1 }
        case .acquireSlot: acquireSlot(token)
        default: assertionFailure("an attempt does not begin with \(next)")
        }
    }

    /// Asks the host's rate-limit pause and circuit breaker, then the gate for a slot; the
    /// grant continues in ``slotGranted(_:)``.
    func acquireSlot(_ token: UInt64) {
        if let host = attemptHost() {
            guard passRateLimit(token, host: host), passCircuitBreaker(token, host: host) else { return }
        }
        acquireGate(token)
    }

    /// `host:port` of what the attempt sends, when a rate limit or a breaker asks for it:
    /// parsed once an attempt (URL parsing is not cheap in Foundation).
    private func attemptHost() -> String? {
        guard environment.rateLimits != nil || environment.circuitBreaker != nil else { return nil }
        return state.withLock { state in
            if state.current.host == nil { state.current.host = state.hostKey(of: (state.outgoing ?? state.request).url)?.description }
            return state.current.host
        }
    }

    private func acquireGate(_ token: UInt64) {
        guard let gate = environment.gate else {
            slotGranted(token)
            return
        }
        let priority = queuePriority.rawValue
        // The host only matters to a gate with a per-host limit: no URL parsing otherwise.
        let slotHost = gate.perHostLimit == nil ? nil : state.withLock { state in
            state.current.slotHost = state.hostKey(of: (state.outgoing ?? state.request).url)?.description
            return state.current.slotHost
        }
        let ticket = gate.acquire(host: slotHost, priority: priority) { [self] in slotGranted(token) }
        state.withLock { state in
            if state.isCurrent(token: token), !state.current.slotHeld { state.current.ticket = ticket }
        }
    }

    /// The host asked every client to slow down: the attempt waits, without a slot, until
    /// the pause is over, then asks again. False when it waits or the operation ended.
    private func passRateLimit(_ token: UInt64, host: String) -> Bool {
        guard let limits = environment.rateLimits, let (until, _) = limits.waitUntil(host) else { return true }
        let clock = environment.clock, events = environment.events
        let stale = ifCurrent(token) { state -> ScheduledTimer?? in
            let entered = state.machine.apply(.rateLimitPause(host: host, until: until))
            guard entered != .refuse else { return nil }
            let old = state.current.rateLimitTimer
            state.current.rateLimitTimer = clock.schedule(at: until) { [weak self] in self?.rateLimitPauseOver(token) }
            if entered == .announce {
                publish(&state, .rateLimitWaiting(host: host, until: events.elapsed() + (until - clock.now())))
            }
            return .some(old)
        }
        if let stale { stale?.cancel() }
        return false
    }

    private func rateLimitPauseOver(_ token: UInt64) {
        guard withCurrent(token, { $0.current.rateLimitTimer = nil }) else { return }
        acquireSlot(token)
    }

    /// Asks the host's breaker before the attempt takes a slot. False when the attempt waits
    /// (without a slot; the breaker calls ``acquireSlot(_:)`` again when the wait is over),
    /// was refused (the operation failed), or the operation ended meanwhile.
    private func passCircuitBreaker(_ token: UInt64, host: String) -> Bool {
        guard let breaker = environment.circuitBreaker else { return true }
        // Strong: see the deadline timer in RequestOperation.swift.
        switch breaker.admit(host, whenReady: { [self] in acquireSlot(token) }) {
        case .send(let pass):
            let timer = ifCurrent(token) { state -> ScheduledTimer?? in
                state.current.circuitPass = pass
                state.current.circuitWait = nil
                defer { state.current.circuitTimer = nil }
                return .some(state.current.circuitTimer)
            }
            guard let timer else {
                pass.giveBack()
                return false
            }
            timer?.cancel()
            return true
        case .wait(let wait, _):
            let clock = environment.clock
            let kept = withCurrent(token) { state in
                // A wake-up that already let the attempt through wins over this older answer.
                guard state.current.circuitPass == nil else { return }
                state.current.circuitWait = wait
                if state.current.circuitTimer == nil, let maxWait = breaker.maxWait {
                    state.current.circuitTimer = clock.schedule(at: clock.now() + maxWait) { [weak self] in
                        self?.circuitWaitTooLong(host: host, waited: maxWait, token: token)
                    }
                }
                guard state.machine.apply(.circuitWait(host: host)) == .announce else { return }
                publish(&state, .circuitWaiting(host: host))
            }
            if !kept { wait.cancel() }
            return false
        case .refuse(let reason):
            fail(token, .circuitOpen(host: host, reason: reason), reason: reason)
            return false
        }
    }

    /// The host's breaker opened (or half-opened) after it let this attempt through and
    /// before its request reached the transport — attempts admitted together wait for slots,
    /// and 42 went to a dead host in the 10 ms after its breaker opened. Such an attempt gives
    /// back its pass and its slot and asks the breaker again (it waits like the rest); a
    /// probe goes on. True when the attempt went back to wait.
    /// - Parameter slotFromGate: the gate granted a slot the state does not hold yet.
    private func waitsAgainForCircuit(_ token: UInt64, slotFromGate: Bool) -> Bool {
        guard let breaker = environment.circuitBreaker else { return false }
        let admitted = ifCurrent(token) { state -> (CircuitPass, String)? in
            guard let pass = state.current.circuitPass, !pass.isProbe, let host = state.current.host else { return nil }
            return (pass, host)
        }
        // Asked outside the operation's lock: the breaker's lock is never taken under it.
        guard let (pass, host) = admitted, !breaker.isClosed(host) else { return false }
        let back = ifCurrent(token) { state -> (slot: Bool, slotHost: String?)? in
            guard state.current.circuitPass === pass, state.machine.apply(.slotReturned) == .acquireSlot else { return nil }
            state.current.circuitPass = nil
            let held = slotFromGate || state.current.slotHeld
            state.current.slotHeld = false
            return (held, state.current.slotHost)
        }
        guard let back else { return false }
        pass.giveBack()
        if back.slot { environment.gate?.release(host: back.slotHost) }
        acquireSlot(token)
        return true
    }

    /// The breaker kept the attempt waiting for its longest wait: the operation fails.
    private func circuitWaitTooLong(host: String, waited: TimeInterval, token: UInt64) {
        guard ifCurrent(token, { state in state.machine.apply(.circuitWaitExpired) == .failWaitingForCircuit ? true : nil }) != nil
        else { return }
        let reason = "circuit for \(host) still open after waiting \(DurationText.format(waited))"
        fail(token, .circuitOpen(host: host, reason: reason), reason: reason)
    }

    private func slotGranted(_ token: UInt64) {
        // The slot is the gate's until `slotHeld` is set below: given back here if the attempt waits again.
        if waitsAgainForCircuit(token, slotFromGate: true) { return }
        let prepares = options.preparer != nil
        let granted = ifCurrent(token) { state -> (URLRequest, Int, Bool)? in
            guard state.machine.apply(.slotGranted(prepares: prepares)) != .refuse else { return nil }
            state.current.slotHeld = true
            state.current.ticket = nil
            state.record.startedAt = environment.clock.now()
            let first = state.firstAttemptAt == nil
            if first { state.firstAttemptAt = environment.clock.now() }
            publish(&state, .started)
            return (state.outgoing ?? state.request, state.attempt, first)
        }
        guard let (request, attempt, first) = granted else {
            // Ended (cancelled) while the slot was on its way: hand it straight back.
            environment.gate?.release(host: state.withLock { $0.current.slotHost })
            return
        }
        // An operation's first attempt is a request the host's retry budget grows by.
        if first, let budget = environment.retryBudget, let host { budget.requestSent(to: host.description) }
        guard let preparer = options.preparer else {
            send(request, token: token, attempt: attempt)
            return
        }
        let work = Task { [self] in
            do {
                let prepared = try await preparer.prepare(request, attempt: attempt)
                send(prepared, token: token, attempt: attempt)
            } catch {
                attemptFailed(.preparation("\(error)"), token: token, taskError: nil)
            }
        }
        keep(work, ifCurrent: token) { $0.current.preparation = $1 }
    }

    /// The seam: hands the prepared request to the transport. Its callbacks arrive in
    /// RequestOperation+TransportCallbacks.swift.
    private func send(_ request: URLRequest, token: UInt64, attempt: Int) {
        // The preparer may have taken a while: the breaker is asked again before the transport.
        if options.preparer != nil, waitsAgainForCircuit(token, slotFromGate: false) { return }
        // Never hand the transport a header it would drop without a word.
        if let problem = HTTPFieldCheck.problem(in: request) {
            attemptFailed(.preparation("not sent: \(problem)"), token: token, taskError: nil, retryable: false)
            return
        }
        var prepared = instrumented(withCookies(request), attempt: attempt)
        if let file = options.bodyFile {
            do {
                try BodyFile.attach(file, to: &prepared, withLength: environment.transport.sendsLengthWithStreams)
            } catch {
                attemptFailed(.preparation("not sent: \(error)"), token: token, taskError: nil, retryable: false)
                return
            }
        } else if prepared.httpBodyStream != nil, !environment.transport.sendsLengthWithStreams {
            // The caller's own stream: a length beside it would go out with chunking too.
            prepared.setValue(nil, forHTTPHeaderField: "Content-Length")
        }
        // The operation's timers end the attempt; the transport's idle timeout must not come
        // first (URLSession's default cut every attempt at 60 s whatever the operation allowed).
        if environment.transport.usesRequestTimeoutInterval {
            prepared.timeoutInterval = Self.transportTimeout(attemptTimeout: options.attemptTimeout, deadline: options.deadline)
        }
        let transport = environment.transport
        let uploadTotal = Self.bodyLength(of: prepared, file: options.bodyFile)
        // A person at a breakpoint chose the answer or the failure: made here, not sent.
        let forced = state.withLock { state in state.isCurrent(token: token) ? state.current.forcedFault : nil }
        let task = forced.map { rule in environment.faultInjection.makeTask(for: prepared, handler: AttemptCallbacks(self), injecting: rule) }
            ?? transport.makeTask(for: prepared, handler: AttemptCallbacks(self))
        let started = ifCurrent(token) { state -> Bool? in
            guard state.machine.apply(.sent) == .announce else { return nil }
            state.current.preparation = nil
            state.current.task = task
            state.current.uploadTotal = uploadTotal
            state.sent = prepared
            state.answer = Answer()
            state.record.sentAt = environment.clock.now()
            publish(&state, .taskCreated(taskIdentifier: task.identifier, url: prepared.url?.absoluteString ?? "",
                                            insecure: !transport.verifiesCertificates))
            if let timeout = options.attemptTimeout {
                // Strong: see the deadline timer in RequestOperation.swift.
                state.current.timer = environment.clock.schedule(at: environment.clock.now() + timeout) { [self] in
                    attemptTimedOut(token: token)
                }
            }
            if let read = options.readTimeout {
                state.current.lastProgress = environment.clock.now()
                state.current.readTimer = environment.clock.schedule(at: state.current.lastProgress + read) { [self] in
                    checkReadTimeout(token: token)
                }
            }
            // Resumed outside the lock, below: a cancel decided before the resume returned
            // waits for it (`unresumed`).
            state.unresumed.insert(task.identifier)
            armHedge(&state, token: token, request: prepared)
            return true
        } ?? false
        guard started else { return transport.discard(task) }
        resumeOutsideLock(task)
    }

    /// How long the request's body is, when that can be known before it is sent.
    static func bodyLength(of request: URLRequest, file: URL?) -> Int? {
        if let body = request.httpBody { return body.count }
        if let file { return try? BodyFile.size(of: file) }
        return request.value(forHTTPHeaderField: "Content-Length").flatMap { Int($0) }
    }

    /// The request as the instruments make it (a trace's `traceparent`), for attempt `attempt`.
    func instrumented(_ request: URLRequest, attempt: Int) -> URLRequest {
        environment.instruments.reduce(request) { $1.willSend($0, operation: id, attempt: attempt) }
    }

    private func attemptTimedOut(token: UInt64) {
        let now = environment.clock.now()
        let tasks = ifCurrent(token) { state -> [TransportTask]? in
            guard let task = state.current.task else { return nil }
            state.current.timedOut = true
            // Hedges racing it time out with it: the timeout is the attempt's, not a copy's.
            let timedOut = TransportError(code: URLError.Code.timedOut.rawValue, message: "timed out (attempt timeout)", timeout: .attempt)
            return [task] + closeRacers(&state, at: now, error: timedOut)
        }
        if let tasks { cancelTasks(tasks) }
    }

    /// The read timer fired: the attempt ends if nothing came since ``RequestOptions/readTimeout``
    /// ago, else the timer waits for the rest of the span from the last progress.
    private func checkReadTimeout(token: UInt64) {
        guard let read = options.readTimeout else { return }
        let now = environment.clock.now()
        let tasks = ifCurrent(token) { state -> [TransportTask]? in
            guard let task = state.current.task, !state.current.timedOut, !state.current.readTimedOut else { return nil }
            let due = state.current.lastProgress + read
            if now < due - 0.000_5 {
                state.current.readTimer = environment.clock.schedule(at: due) { [self] in checkReadTimeout(token: token) }
                return nil
            }
            state.current.readTimedOut = true
            let error = TransportError(code: URLError.Code.timedOut.rawValue, message: "no byte for \(DurationText.format(read)) (read timeout)", timeout: .read)
            state.current.localFailure = error
            return [task] + closeRacers(&state, at: now, error: error)
        }
        if let tasks { cancelTasks(tasks) }
    }

    /// A week: the transport's idle timeout for an operation with neither timeout nor deadline.
    static let unlimitedTransportTimeout: TimeInterval = 7 * 24 * 3600

    /// The idle timeout handed to the transport with each attempt's request: a whole second
    /// (URLSession's are whole seconds) past the longest the operation lets the attempt run,
    /// so the operation's own timer ends it first and says which limit it was.
    static func transportTimeout(attemptTimeout: TimeInterval?, deadline: TimeInterval?) -> TimeInterval {
        guard let limit = [attemptTimeout, deadline].compactMap({ $0 }).min() else { return unlimitedTransportTimeout }
        return min(unlimitedTransportTimeout, (limit + 1).rounded(.up))
    }

    /// `request` with the queue's cookies for its URL, unless it brings a `Cookie` of its own.
    func withCookies(_ request: URLRequest) -> URLRequest {
        // An empty jar (most services) costs one lock: no header lookup, no URL parsing.
        guard let jar = environment.cookies, !jar.isEmpty, request.value(forHTTPHeaderField: "Cookie") == nil, let url = request.url,
              let header = jar.header(for: url) else { return request }
        var request = request
        request.setValue(header, forHTTPHeaderField: "Cookie")
        return request
    }
}
