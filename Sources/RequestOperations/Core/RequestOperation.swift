import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// One HTTP request as an `Operation`, with its whole life: wait for a slot, prepare the
/// request, run the task on the shared session, validate the response as it arrives,
/// collect the body, and on failure ask the retry policy whether and when to go again.
///
/// Flow control around the attempt (see ``RequestOptions``): a dependent operation first
/// builds its request from its parents' results; each attempt then waits for reactors that
/// hold new requests, runs the interceptor chain (which may hold it in a batch), takes a
/// slot; after it, reactors may act on the result (refresh a token once for many 401s)
/// and requeue it; a typed operation parses the body of the final success.
///
/// Every state change and every delegate callback is published on the environment's
/// ``EventHub``. The operation ends exactly once, as success, failure or cancelled, and then
/// calls its completion handler exactly once.
///
/// Stages and their override points (each with a documented default in ``RequestOptions``):
/// ``RequestOptions/preparer``, ``RequestOptions/validator``,
/// ``RequestOptions/retryPolicy``, ``RequestOptions/challengeHandler``.
///
/// `@unchecked Sendable`: `Operation` is not `Sendable`; all mutable state of this class is
/// one struct behind a lock.
open class RequestOperation: AsyncOperation, SessionTaskHandler, @unchecked Sendable {
    /// Unique within the session; the `op` of its events.
    public let id: String
    public let options: RequestOptions
    public let environment: RequestEnvironment
    /// Operations this one depends on; their results feed ``build``.
    public let parents: [RequestOperation]
    private let build: RequestBuilder?
    private let completion: (@Sendable (RequestResult) -> Void)?
    /// Internal (not private) for the flow-control extension in RequestOperation+FlowControl.swift.
    let state: Mutex<State>

    /// - Parameters:
    ///   - id: a unique id; by default the session makes one (`op-1`, ...).
    ///   - parents: operations that must succeed first (added as dependencies). If one fails
    ///     or is cancelled, this one is cancelled `by: "dependency"` without running.
    ///   - build: makes the request from the parents' results, once they all succeeded.
    ///   - completion: runs exactly once, when the operation ends, on the thread that ended it.
    public init(request: URLRequest, id: String? = nil, options: RequestOptions = RequestOptions(),
                environment: RequestEnvironment, after parents: [RequestOperation] = [], build: RequestBuilder? = nil,
                completion: (@Sendable (RequestResult) -> Void)? = nil) {
        self.id = id ?? environment.events.makeOperationID()
        self.options = options
        self.environment = environment
        self.parents = parents
        self.build = build
        self.completion = completion
        self.state = Mutex(State(createdAt: environment.clock.now(), request: request))
        super.init()
        name = self.id
        parents.forEach(addDependency)
        environment.events.publish(operation: self.id, attempt: 1,
                                   .queued(method: request.httpMethod ?? "GET", url: request.url?.absoluteString ?? "",
                                           headers: request.allHTTPHeaderFields ?? [:], maxAttempts: options.retryPolicy.attemptLimit))
    }

    // MARK: - What callers can read

    /// The request as built (for a dependent operation, once its parents finished), before
    /// interceptors and preparation.
    public var request: URLRequest { state.withLock { $0.request } }

    private var host: HostKey? { HostKey(url: request.url) }

    public var phase: RequestPhase { state.withLock { $0.phase } }
    /// The attempt running or next to run, from 1.
    public var attempt: Int { state.withLock { $0.attempt } }
    public var attempts: [AttemptRecord] { state.withLock { $0.records } }
    /// Set once, when the operation ends.
    public var result: RequestResult? { state.withLock { $0.result } }

    // MARK: - Commands

    /// Skips the rest of a backoff and starts the next attempt now. Returns false when the
    /// operation is not waiting to retry.
    @discardableResult
    public func retryNow() -> Bool {
        let token = state.withLock { state -> UInt64? in
            guard case .waitingToRetry = state.phase, state.result == nil else { return nil }
            publish(&state, .earlyRetry(trigger: "manual", delay: 0))
            return state.token
        }
        guard let token else { return false }
        beginAttempt(ifCurrent: token)
        return true
    }

    override open func cancel() {
        cancel(by: "caller")
    }

    /// Cancels in any stage: the task is cancelled, a pending backoff ends, no further
    /// request is sent, and the operation ends as cancelled at once.
    open func cancel(by who: String) {
        super.cancel()
        end(outcome: .cancelled, error: .cancelled(by: who), reason: "cancelled by \(who)", cancelledBy: who)
    }

    // MARK: - Lifecycle

    override open func execute() {
        let alreadyEnded = state.withLock { state -> Bool in
            guard state.result == nil else { return true }
            state.startedAt = environment.clock.now()
            return false
        }
        if alreadyEnded {
            finish()
            return
        }
        guard buildFromParents() else { return }
        if let deadline = options.deadline {
            let timer = environment.clock.schedule(at: environment.clock.now() + deadline) { [weak self] in
                self?.end(outcome: .failure, error: .deadlineExceeded(deadline),
                          reason: "deadline of \(ExponentialBackoffRetryPolicy.format(deadline)) exceeded", cancelledBy: nil)
            }
            let stale = state.withLock { state -> Bool in
                guard state.result == nil else { return true }
                state.deadlineTimer = timer
                return false
            }
            if stale { timer.cancel() }
        }
        beginAttempt()
    }

    /// Cancels the operation if a parent did not succeed; else builds its request from
    /// their results. Returns false when the operation ended.
    private func buildFromParents() -> Bool {
        if let parent = parents.first(where: { $0.result?.outcome != .success }) {
            let what = switch parent.result?.outcome {
            case .failure?: "failed"
            case .cancelled?: "was cancelled"
            default: "did not run"
            }
            end(outcome: .cancelled, error: .cancelled(by: "dependency"), reason: "parent \(parent.id) \(what)", cancelledBy: "dependency")
            return false
        }
        guard let build else { return true }
        do {
            let built = try build(request, DependencyResults(parents: parents))
            state.withLock { $0.request = built }
            return true
        } catch {
            end(outcome: .failure, error: .preparation("cannot build the request from its parents: \(error)"),
                reason: "cannot build the request from its parents: \(error)", cancelledBy: nil)
            return false
        }
    }

    /// Asks the gate for a slot for the current attempt. With `expected`, only if no other
    /// path (timer, early retry, retryNow) has begun the attempt first.
    /// `reintercept: false` sends the request the interceptors made for the last attempt.
    func beginAttempt(ifCurrent expected: UInt64? = nil, reintercept: Bool = true) {
        let needsAdmission = !options.interceptors.isEmpty || options.reactors.contains { $0.options.holdNewRequests }
        let begun = state.withLock { state -> (UInt64, Teardown)? in
            guard state.result == nil else { return nil }
            if let expected, state.token != expected { return nil }
            let teardown = Teardown(timers: [state.retryTimer].compactMap { $0 }, observation: state.observation)
            state.token += 1
            state.phase = needsAdmission ? .intercepting : .waitingForSlot
            state.retryTimer = nil
            state.observation = nil
            if reintercept { state.outgoing = nil }
            state.records.append(AttemptRecord(number: state.attempt, queuedAt: environment.clock.now()))
            return (state.token, teardown)
        }
        guard let (token, teardown) = begun else { return }
        teardown.perform(session: environment.session, gate: nil)
        guard needsAdmission else {
            acquireSlot(token)
            return
        }
        let work = Task { [self] in await admit(token) }
        let stale = state.withLock { state -> Bool in
            guard state.token == token, state.result == nil else { return true }
            state.waiting = work
            return false
        }
        if stale { work.cancel() }
    }

    // MARK: - The attempt

    func acquireSlot(_ token: UInt64) {
        guard let gate = environment.gate else {
            slotGranted(token)
            return
        }
        let priority = queuePriority.rawValue
        // The host only matters to a gate with a per-host limit: no URL parsing otherwise.
        let slotHost = gate.perHostLimit == nil ? nil : state.withLock { state in
            state.slotHost = HostKey(url: (state.outgoing ?? state.request).url)?.description
            return state.slotHost
        }
        let ticket = gate.acquire(host: slotHost, priority: priority) { [self] in slotGranted(token) }
        state.withLock { state in
            if state.token == token, !state.slotHeld, state.result == nil { state.ticket = ticket }
        }
    }

    private func slotGranted(_ token: UInt64) {
        let granted = state.withLock { state -> URLRequest? in
            guard state.token == token, state.result == nil else { return nil }
            state.slotHeld = true
            state.ticket = nil
            state.phase = .preparing
            state.records[state.records.count - 1].startedAt = environment.clock.now()
            if state.firstAttemptAt == nil { state.firstAttemptAt = environment.clock.now() }
            publish(&state, .started)
            return state.outgoing ?? state.request
        }
        guard let request = granted else {
            // Ended (cancelled) while the slot was on its way: hand it straight back.
            environment.gate?.release(host: state.withLock { $0.slotHost })
            return
        }
        guard let preparer = options.preparer else {
            send(request, token: token)
            return
        }
        let attempt = state.withLock { $0.attempt }
        let work = Task { [self] in
            do {
                let prepared = try await preparer.prepare(request, attempt: attempt)
                send(prepared, token: token)
            } catch {
                attemptFailed(.preparation("\(error)"), token: token, taskError: nil)
            }
        }
        let stale = state.withLock { state -> Bool in
            guard state.token == token, state.result == nil else { return true }
            state.preparation = work
            return false
        }
        if stale { work.cancel() }
    }

    private func send(_ prepared: URLRequest, token: UInt64) {
        let task = environment.session.makeDataTask(with: prepared, handler: self)
        let started = state.withLock { state -> Bool in
            guard state.token == token, state.result == nil else { return false }
            state.preparation = nil
            state.task = task
            state.sent = prepared
            state.phase = .inFlight
            state.response = nil
            state.body = Data()
            state.invalid = nil
            state.cancelledAsInvalid = false
            state.challengeRefused = false
            state.timedOut = false
            state.records[state.records.count - 1].sentAt = environment.clock.now()
            publish(&state, .taskCreated(taskIdentifier: task.taskIdentifier, url: prepared.url?.absoluteString ?? ""))
            if let timeout = options.attemptTimeout {
                state.attemptTimer = environment.clock.schedule(at: environment.clock.now() + timeout) { [weak self] in
                    self?.attemptTimedOut(token: token)
                }
            }
            // Resumed under the lock so that a concurrent cancel() sees the task and cancels
            // it after it started; resume() only schedules work and calls back nothing.
            task.resume()
            return true
        }
        if !started {
            environment.session.unregister(task)
        }
    }

    private func attemptTimedOut(token: UInt64) {
        let task = state.withLock { state -> URLSessionDataTask? in
            guard state.token == token, state.result == nil, let task = state.task else { return nil }
            state.timedOut = true
            return task
        }
        if let task { environment.session.cancel(task) }
    }

    // MARK: - Session delegate callbacks (on the session's serial delegate queue)

    func task(_ task: Int, willRedirect response: HTTPURLResponse, to request: URLRequest) -> URLRequest? {
        state.withLock { state -> URLRequest? in
            guard state.isCurrent(task) else { return nil }
            publish(&state, .redirect(status: response.statusCode, location: request.url?.absoluteString ?? ""))
            return request
        }
    }

    func task(_ task: Int, didReceive response: URLResponse) -> URLSession.ResponseDisposition {
        let invalidTask = state.withLock { state -> URLSessionDataTask? in
            guard state.isCurrent(task) else { return nil }
            let now = environment.clock.now()
            // Every response starts a new body: on Linux an authentication challenge
            // delivers the 401 response before the real one.
            state.body = Data()
            state.invalid = nil
            guard let http = response as? HTTPURLResponse else { return nil }
            state.response = http
            state.records[state.records.count - 1].responseAt = now
            state.records[state.records.count - 1].status = http.statusCode
            state.records[state.records.count - 1].bytes = 0
            let expected = response.expectedContentLength >= 0 ? Int(response.expectedContentLength) : nil
            publish(&state, .response(status: http.statusCode, headers: http.headerDictionary, expectedBytes: expected))
            guard let failure = options.validator.validate(http) else { return nil }
            state.invalid = failure
            publish(&state, .validationFailed(reason: failure.summary))
            guard options.cancelOnInvalidResponse else { return nil }
            state.cancelledAsInvalid = true
            return state.task
        }
        // The `.cancel` disposition is ignored on Linux (the body is read to the end),
        // so the task is cancelled outright.
        if let invalidTask { environment.session.cancel(invalidTask) }
        return .allow
    }

    func task(_ task: Int, didReceive data: Data) {
        state.withLock { state in
            guard state.isCurrent(task) else { return }
            if state.records[state.records.count - 1].firstByteAt == nil {
                state.records[state.records.count - 1].firstByteAt = environment.clock.now()
            }
            state.body.append(data)
            state.records[state.records.count - 1].bytes += data.count
            publish(&state, .data(bytes: data.count))
        }
    }

    func task(_ task: Int, didReceive challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        // Default handling can hang forever on Linux (swift-corelibs-foundation before PR
        // 5457). With no credential to offer, the 401 itself is the answer.
        let answer = options.challengeHandler?(challenge) ?? (.rejectProtectionSpace, nil)
        if answer.0 == .rejectProtectionSpace || answer.0 == .cancelAuthenticationChallenge {
            state.withLock { state in
                if state.isCurrent(task) { state.challengeRefused = true }
            }
        }
        return answer
    }

    func task(_ task: Int, didCompleteWithError error: Error?) {
        let current = state.withLock { state -> (UInt64, AttemptFailure?, TransportError?, Bool)? in
            guard state.isCurrent(task) else { return nil }
            let failure: AttemptFailure?
            var error = error
            // A refused challenge ends the task as "cancelled" on Linux, after the 401
            // response and its body arrived: that response is the answer.
            if state.challengeRefused, state.response != nil, (error as? URLError)?.code == .cancelled {
                error = nil
            }
            var reported = error.map(TransportError.init)
            if state.timedOut {
                failure = .transport(.timedOut)
                reported = TransportError(code: URLError.Code.timedOut.rawValue, message: "timed out (attempt timeout)")
            } else if state.cancelledAsInvalid {
                failure = state.invalid
            } else if let error {
                let transport = TransportError(error)
                reported = transport
                failure = .transport(URLError.Code(rawValue: transport.code) ?? .unknown)
            } else {
                failure = state.invalid
            }
            state.task = nil
            state.records[state.records.count - 1].endedAt = environment.clock.now()
            publish(&state, .taskCompleted(error: reported))
            return (state.token, failure, reported, failure == nil)
        }
        guard let (token, failure, reported, _) = current else { return }
        attemptCompleted(failure, token: token, taskError: reported)
    }

    /// After an attempt: reactors first, then success or the retry policy.
    func attemptCompleted(_ failure: AttemptFailure?, token: UInt64, taskError: TransportError?, askReactors: Bool = true) {
        if askReactors, !options.reactors.isEmpty, let input = state.withLock({ state -> ReactorInput? in
            guard state.token == token, state.result == nil else { return nil }
            return ReactorInput(operationID: id, request: state.sent ?? state.request, status: state.response?.statusCode,
                                headers: state.response?.headerDictionary ?? [:], failure: failure)
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
                let (body, response) = state.withLock { ($0.body, $0.response) }
                try parseBody(body, response: response)
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

    /// Parses the body of the final successful response; throwing fails the operation
    /// (stage `decoding`). ``TypedRequestOperation`` overrides it.
    func parseBody(_ data: Data, response: HTTPURLResponse?) throws {}

    // MARK: - Retry

    /// Ends the current attempt with `failure` and either schedules the next or ends.
    private func attemptFailed(_ failure: AttemptFailure, token: UInt64, taskError: TransportError?) {
        let now = environment.clock.now()
        let outcome = state.withLock { state -> (Teardown, ScheduledRetry?)? in
            guard state.token == token, state.result == nil else { return nil }
            var teardown = closeAttempt(&state, failure: failure, at: now)
            let index = state.records.count - 1
            if case .preparation(let reason) = failure {
                publish(&state, .preparationFailed(reason: reason))
            }

            let context = RetryContext(method: state.request.httpMethod ?? "GET", headers: state.request.allHTTPHeaderFields ?? [:],
                                       attempt: state.attempt - state.requeues, failure: failure,
                                       elapsed: now - (state.firstAttemptAt ?? now), previousDelay: state.lastDelay,
                                       wallClockNow: Date(), random: environment.random)
            var decision = options.retryPolicy.decide(context)
            if case .retry(let delay, _, _) = decision, let deadline = options.deadline,
               let startedAt = state.startedAt, now + delay >= startedAt + deadline {
                decision = .stop(reason: "\(failure.summary); the next retry would start after the \(ExponentialBackoffRetryPolicy.format(deadline)) deadline")
            }
            state.records[index].decision = decision.reason

            guard case .retry(let delay, let reason, let fromServer) = decision else {
                let error = state.attempt > 1 ? RequestError.retriesExhausted(attempts: state.attempt, last: RequestError(failure)) : RequestError(failure)
                teardown.merge(endLocked(&state, outcome: .failure, error: error, reason: decision.reason, cancelledBy: nil))
                return (teardown, nil)
            }
            state.records[index].retryDelay = delay
            state.lastDelay = delay
            state.attempt += 1
            state.phase = .waitingToRetry(until: now + delay)
            publish(&state, .retryScheduled(delay: delay, reason: reason), attempt: state.attempt - 1)
            return (teardown, ScheduledRetry(delay: delay, fromServer: fromServer, failure: failure))
        }
        guard let (teardown, retry) = outcome else { return }
        teardown.perform(session: environment.session, gate: environment.gate)
        if let result = teardown.result { completed(result) }
        if let retry { scheduleRetry(retry, token: token) }
    }

    private struct ScheduledRetry {
        var delay: TimeInterval
        var fromServer: Bool
        var failure: AttemptFailure
    }

    private func scheduleRetry(_ retry: ScheduledRetry, token: UInt64) {
        let clock = environment.clock
        let timer = clock.schedule(at: clock.now() + retry.delay) { [weak self] in self?.retryDue(token: token) }
        var observation: RecoveryObservation?
        if let recovery = environment.recovery, let host {
            let onSuccess = options.earlyRetryOnHostSuccess && !retry.fromServer
            let probe = options.earlyRetryOnProbe && retry.failure.isConnectivityFailure
            if onSuccess || probe {
                observation = recovery.observe(host, onSuccess: onSuccess, probe: probe) { [weak self] trigger, delay in
                    self?.hostRecovered(trigger: trigger, delay: delay, token: token)
                }
            }
        }
        let stale = state.withLock { state -> Bool in
            guard state.token == token, state.result == nil, case .waitingToRetry = state.phase else { return true }
            state.retryTimer = timer
            state.observation = observation
            return false
        }
        if stale {
            timer.cancel()
            observation?.cancel()
        }
    }

    private func retryDue(token: UInt64) {
        beginAttempt(ifCurrent: token)
    }

    private func hostRecovered(trigger: String, delay: TimeInterval, token: UInt64) {
        let clock = environment.clock
        let replaced = state.withLock { state -> ScheduledTimer?? in
            guard state.token == token, state.result == nil, case .waitingToRetry(let until) = state.phase else { return .none }
            let now = clock.now()
            guard now + delay < until else { return .none }
            state.phase = .waitingToRetry(until: now + delay)
            state.observation = nil
            publish(&state, .earlyRetry(trigger: trigger, delay: delay))
            let old = state.retryTimer
            state.retryTimer = clock.schedule(at: now + delay) { [weak self] in self?.retryDue(token: token) }
            return .some(old)
        }
        if case .some(let old) = replaced { old?.cancel() }
    }

    // MARK: - Ending

    /// Ends the operation (once): tears down whatever stage it is in, publishes the end,
    /// calls the completion handler and finishes the `Operation`.
    func end(outcome: RequestOutcome, error: RequestError?, reason: String?, cancelledBy: String?) {
        let teardown = state.withLock { state -> Teardown? in
            guard state.result == nil else { return nil }
            return endLocked(&state, outcome: outcome, error: error, reason: reason, cancelledBy: cancelledBy)
        }
        guard let teardown else { return }
        teardown.perform(session: environment.session, gate: environment.gate)
        if let result = teardown.result { completed(result) }
    }

    /// Ends the current attempt's own part under the lock (its timer, task and slot) and
    /// records how it ended; the rest of the operation goes on. What to undo is returned.
    func closeAttempt(_ state: inout State, failure: AttemptFailure?, at now: TimeInterval) -> Teardown {
        var teardown = Teardown(timers: [state.attemptTimer].compactMap { $0 })
        state.attemptTimer = nil
        state.task = nil
        state.preparation = nil
        teardown.giveBackSlot(of: state)
        state.slotHeld = false
        let index = state.records.count - 1
        state.records[index].endedAt = state.records[index].endedAt ?? now
        state.records[index].failure = failure
        return teardown
    }

    private func endLocked(_ state: inout State, outcome: RequestOutcome, error: RequestError?, reason: String?,
                           cancelledBy: String?) -> Teardown {
        let now = environment.clock.now()
        var teardown = Teardown(
            timers: [state.attemptTimer, state.retryTimer, state.deadlineTimer].compactMap { $0 },
            observation: state.observation)
        teardown.task = state.task
        teardown.preparation = state.preparation
        teardown.waiting = state.waiting
        state.waiting = nil
        if let ticket = state.ticket { teardown.ticket = ticket }
        teardown.giveBackSlot(of: state)
        state.slotHeld = false
        state.task = nil
        state.preparation = nil
        state.ticket = nil
        state.attemptTimer = nil
        state.retryTimer = nil
        state.deadlineTimer = nil
        state.observation = nil
        if let last = state.records.indices.last, state.records[last].endedAt == nil, state.records[last].startedAt != nil {
            state.records[last].endedAt = now
        }

        let status = state.response?.statusCode
        let duration = now - (state.startedAt ?? state.createdAt)
        let attempts = state.records.filter { $0.startedAt != nil }.count
        let result = RequestResult(outcome: outcome, status: status, headers: state.response?.headerDictionary ?? [:],
                                   data: state.body, error: error, attempts: state.records, duration: duration)
        state.result = result
        state.phase = .finished(outcome)
        if let cancelledBy { publish(&state, .cancelled(by: cancelledBy)) }
        publish(&state, .finished(outcome: outcome, status: status, attempts: attempts, duration: duration, reason: reason))
        teardown.result = result
        return teardown
    }

    /// Runs the completion handler, then finishes the `Operation` if its queue started it
    /// (one that was cancelled before it started is finished by `execute()`).
    private func completed(_ result: RequestResult) {
        completion?(result)
        if state.withLock({ $0.startedAt != nil }) { finish() }
    }

    func publish(_ state: inout State, _ payload: RequestEvent.Payload, attempt: Int? = nil) {
        environment.events.publish(operation: id, attempt: attempt ?? state.attempt, payload)
    }
}

extension RequestOperation {
    /// The operation's mutable state, guarded by one lock.
    struct State {
        let createdAt: TimeInterval
        var startedAt: TimeInterval?
        var firstAttemptAt: TimeInterval?
        var phase = RequestPhase.pending
        var attempt = 1
        /// Bumped for each attempt, so late timers and callbacks of an earlier one are ignored.
        var token: UInt64 = 0
        var records: [AttemptRecord] = []
        var ticket: ConcurrencyGate.Ticket?
        var slotHeld = false
        var preparation: Task<Void, Never>?
        var task: URLSessionDataTask?
        var attemptTimer: ScheduledTimer?
        var retryTimer: ScheduledTimer?
        var deadlineTimer: ScheduledTimer?
        var observation: RecoveryObservation?
        var response: HTTPURLResponse?
        var body = Data()
        var invalid: AttemptFailure?
        var cancelledAsInvalid = false
        var challengeRefused = false
        var timedOut = false
        var lastDelay: TimeInterval?
        var result: RequestResult?

        /// The request as built; interceptors start from it on each attempt.
        var request: URLRequest
        /// What the interceptors made of it for the current attempt.
        var outgoing: URLRequest?
        /// What the current or last attempt sent, for reactors.
        var sent: URLRequest?
        /// The admission or reactor wait in progress.
        var waiting: Task<Void, Never>?
        /// Attempts started by reactors, not counted against the retry policy.
        var requeues = 0
        /// The host whose per-host slot the attempt takes.
        var slotHost: String?

        init(createdAt: TimeInterval, request: URLRequest) {
            self.createdAt = createdAt
            self.request = request
        }

        func isCurrent(_ taskIdentifier: Int) -> Bool {
            result == nil && task?.taskIdentifier == taskIdentifier
        }
    }

    /// What to undo after leaving the lock: side effects never run while holding it.
    struct Teardown {
        var timers: [ScheduledTimer] = []
        var observation: RecoveryObservation?
        var task: URLSessionDataTask?
        var preparation: Task<Void, Never>?
        var waiting: Task<Void, Never>?
        var ticket: ConcurrencyGate.Ticket?
        var releaseSlot = false
        /// The host whose per-host slot is given back with the slot.
        var slotHost: String?
        var result: RequestResult?

        /// Gives back the slot the attempt holds, if it holds one.
        mutating func giveBackSlot(of state: State) {
            guard state.slotHeld else { return }
            releaseSlot = true
            slotHost = state.slotHost
        }

        mutating func merge(_ other: Teardown) {
            timers += other.timers
            observation = observation ?? other.observation
            task = task ?? other.task
            preparation = preparation ?? other.preparation
            waiting = waiting ?? other.waiting
            ticket = ticket ?? other.ticket
            releaseSlot = releaseSlot || other.releaseSlot
            slotHost = slotHost ?? other.slotHost
            result = result ?? other.result
        }

        func perform(session: SharedSession, gate: ConcurrencyGate?) {
            timers.forEach { $0.cancel() }
            observation?.cancel()
            if let task { session.cancel(task) }
            preparation?.cancel()
            waiting?.cancel()
            if let ticket, let gate {
                // A waiter already granted holds a slot; its grant sees the end and releases it.
                _ = gate.withdraw(ticket)
            }
            if releaseSlot { gate?.release(host: slotHost) }
        }
    }
}

extension AttemptFailure {
    /// The host could not be reached at all: worth probing for its return.
    var isConnectivityFailure: Bool {
        guard case .transport(let code) = self else { return false }
        return [.cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet].contains(code)
    }
}
