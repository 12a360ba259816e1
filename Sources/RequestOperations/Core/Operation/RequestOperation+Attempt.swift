import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One attempt, from its start to the moment its request is on the transport: admission
/// (see +FlowControl), a slot (+Slot), the preparer, then ``send(_:id:attempt:)`` — the one
/// place a request is handed to the ``RequestTransport``. What the transport reports comes
/// back in RequestOperation+TransportCallbacks.swift.
extension RequestOperation {
    /// Interceptors or reactors that hold new requests run before each attempt takes a slot.
    var needsAdmission: Bool {
        !options.interceptors.isEmpty || options.reactors.contains { $0.options.holdNewRequests }
    }

    /// Begins the next attempt: the first, or the one that waited to retry (`expected`: only
    /// if no other path — its timer, an early retry, `retryNow` — has begun it first).
    /// `reintercept: false` sends the request the interceptors made for the last attempt.
    func beginAttempt(expected: AttemptID? = nil, reintercept: Bool = true) {
        enter(transition(Begin(needsAdmission: needsAdmission, expected: expected, reintercept: reintercept)))
    }

    /// An attempt begins (``AttemptStateMachine/begin(needsAdmission:expected:)``), with its record.
    struct Begin: OperationTransition {
        let needsAdmission: Bool
        let expected: AttemptID?
        let reintercept: Bool

        func apply(to state: inout State, of operation: RequestOperation) -> AttemptStateMachine.Entry {
            let entry = state.machine.begin(needsAdmission: needsAdmission, expected: expected)
            switch entry {
            case .refuse: break
            case .admit, .askForSlot: operation.recordBegun(&state, reintercept: reintercept)
            }
            return entry
        }
    }

    /// The record of an attempt that began.
    func recordBegun(_ state: inout State, reintercept: Bool) {
        if reintercept { state.outgoing = nil }
        state.records.append(AttemptRecord(number: state.attempt, queuedAt: environment.now()))
    }

    /// On from an attempt's start: what the last stage held is let go of, a breakpoint may
    /// stop it, else admission (interceptors, holding reactors) or straight to a slot.
    func enter(_ entry: AttemptStateMachine.Entry) {
        switch entry {
        case .refuse:
            return
        case .admit(let id, let teardown):
            tearDown(teardown)
            if stopsAtBreakpoint(id) { return }
            startAdmission(id)
        case .askForSlot(let id, let teardown):
            tearDown(teardown)
            if stopsAtBreakpoint(id) { return }
            askForSlot(id)
        }
    }

    /// Runs the interceptors and holding reactors of attempt `id` in a task of its own.
    func startAdmission(_ id: AttemptID) {
        startWork(id) { [self] in await admit(id) }
    }

    /// Starts `body` as the work of attempt `id`'s stage (cancelled when the stage is left).
    func startWork(_ id: AttemptID, _ body: @escaping @Sendable () async -> Void) {
        let work = Task { await body() }
        tearDown(transition(WorkStarted(work: work, id: id)))
    }

    /// Work began for attempt `id` (``AttemptStateMachine/workStarted(_:of:)``).
    struct WorkStarted: OperationTransition {
        let work: AttemptStateMachine.Work
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Teardown {
            state.machine.workStarted(work, of: id)
        }
    }

    /// The gate's slot: the breaker is asked again if it may have opened meanwhile, then the
    /// preparer runs, or the request goes.
    func slotGranted(_ id: AttemptID, slotHost: String?) {
        if asksAgainForCircuit(id, slot: .fromGate(host: slotHost)) { return }
        let prepares = options.preparer != nil
        let now = environment.now()
        let (grant, over, request, attempt, first) = transition(SlotGranted(slotHost: slotHost, prepares: prepares, at: now, id: id))
        tearDown(over)
        // An operation's first attempt is a request the host's retry budget grows by.
        let countFirst = { [self] in
            if first, let budget = environment.retryBudget, let host { budget.requestSent(to: host.description) }
        }
        switch grant {
        case .refuse:
            // Ended (cancelled) while the slot was on its way: hand it straight back.
            environment.gate?.release(host: slotHost)
        case .send:
            countFirst()
            send(request, id: id, attempt: attempt)
        case .prepare:
            countFirst()
            guard let preparer = options.preparer else { return }
            startWork(id) { [self] in
                do {
                    let prepared = request.updated(by: try await preparer.prepare(request.foundationHead, attempt: attempt))
                    send(prepared, id: id, attempt: attempt)
                } catch {
                    attemptFailed(.preparation("\(error)"), id: id, taskError: nil)
                }
            }
        }
    }

    /// The gate's slot reached attempt `id`: it starts (its record, `started`), and is
    /// prepared or sent as the request the interceptors made; `first`: the operation's first.
    struct SlotGranted: OperationTransition {
        let slotHost: String?
        let prepares: Bool
        let at: TimeInterval
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation)
            -> (grant: AttemptStateMachine.Grant, over: Teardown, request: RequestMessage, attempt: Int, first: Bool) {
            let (grant, over) = state.machine.slotGranted(slotHost: slotHost, prepares: prepares, of: id)
            switch grant {
            case .refuse:
                return (grant, over, state.request, 0, false)
            case .prepare, .send:
                state.record.startedAt = at
                let first = state.firstAttemptAt == nil
                if first { state.firstAttemptAt = at }
                operation.publish(&state, .started)
                return (grant, over, state.outgoing ?? state.request, state.attempt, first)
            }
        }
    }

    /// The seam: hands the prepared request to the transport. Its callbacks arrive in
    /// RequestOperation+TransportCallbacks.swift.
    private func send(_ request: RequestMessage, id: AttemptID, attempt: Int) {
        assertOutsideTransition()
        // The preparer may have taken a while: the breaker is asked again before the transport.
        if options.preparer != nil, asksAgainForCircuit(id, slot: .inMachine) { return }
        // Never hand the transport a header it would drop without a word.
        if let problem = HTTPFieldCheck.problem(in: request) {
            attemptFailed(.preparation("not sent: \(problem)"), id: id, taskError: nil, retryable: false)
            return
        }
        // A stream is read once: an attempt after the one that sent it has nothing to send,
        // and says so rather than go out with an empty body (a body file is opened afresh).
        if options.bodyFile == nil, let stream = request.body.stream, stream.parts == nil, stream.wasTaken {
            attemptFailed(.preparation("not sent: the request's body is a stream that was sent already"), id: id, taskError: nil, retryable: false)
            return
        }
        var prepared = instrumented(withCookies(request), attempt: attempt)
        if let file = options.bodyFile {
            do {
                try BodyFile.attach(file, to: &prepared, withLength: environment.transport.sendsLengthWithStreams)
            } catch {
                attemptFailed(.preparation("not sent: \(error)"), id: id, taskError: nil, retryable: false)
                return
            }
        } else if prepared.body.stream != nil, !environment.transport.sendsLengthWithStreams {
            // The caller's own stream: a length beside it would go out with chunking too.
            prepared.headerFields[.contentLength] = nil
        }
        // The operation's timers end the attempt; the transport's idle timeout must not come
        // first (URLSession's default cut every attempt at 60 s whatever the operation allowed).
        if environment.transport.usesRequestTimeoutInterval {
            prepared.timeoutInterval = Self.transportTimeout(attemptTimeout: options.attemptTimeout, deadline: options.deadline)
        }
        let transport = environment.transport, clock = environment.clock
        let uploadTotal = Self.bodyLength(of: prepared, file: options.bodyFile)
        // A person at a breakpoint chose the answer or the failure: made here, not sent.
        let forced = look { $0.machine.forcedFault }
        let task = forced.map { rule in environment.faultInjection.makeTask(for: prepared, handler: AttemptCallbacks(self), injecting: rule) }
            ?? transport.makeTask(for: prepared, handler: AttemptCallbacks(self))
        let now = clock.now()
        let sent = Sent(task: task, request: prepared, at: now, uploadTotal: uploadTotal, insecure: !transport.verifiesCertificates, id: id)
        if let refused = transition(sent) { return tearDown(refused) }
        // The attempt's timers start once it is in flight (none can fire into the stage
        // before), and are handed to it with the end of the resume.
        resumeOutsideLock(task) { [self] in
            let started = clock.now()
            // Strong: see the deadline timer in RequestOperation.swift.
            let timers = AttemptTimers(attempt: options.attemptTimeout.map { timeout in clock.schedule(at: started + timeout) { [self] in attemptTimedOut(id) } },
                                       read: options.readTimeout.map { read in clock.schedule(at: started + read) { [self] in checkReadTimeout(id) } },
                                       hedge: hedgeTimer(for: prepared, id: id, from: started))
            return (timers, id)
        }
    }

    /// The request of attempt `id` is on the transport as `task` (resumed after the lock).
    /// Refused: the teardown discards the task.
    struct Sent: OperationTransition {
        let task: TransportTask
        let request: RequestMessage
        let at: TimeInterval
        let uploadTotal: Int?
        let insecure: Bool
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Teardown? {
            if let refused = state.machine.sent(task, at: at, uploadTotal: uploadTotal, of: id) { return refused }
            state.sent = request
            state.answer = Answer()
            state.record.sentAt = at
            operation.publish(&state, .taskCreated(taskIdentifier: task.identifier, url: request.url.absoluteString, insecure: insecure))
            // Resumed outside the lock: a cancel decided before the resume returned waits
            // for it (`resuming`).
            state.resuming[task.identifier] = .resuming
            return nil
        }
    }

    /// How long the request's body is, when that can be known before it is sent.
    static func bodyLength(of request: RequestMessage, file: URL?) -> Int? {
        if let body = request.body.data { return body.count }
        if let file { return try? BodyFile.size(of: file) }
        return request.headerFields[.contentLength].flatMap { Int($0) }
    }

    /// The request as the instruments make it (a trace's `traceparent`), for attempt `attempt`.
    func instrumented(_ request: RequestMessage, attempt: Int) -> RequestMessage {
        environment.instruments.reduce(request) { $1.willSend($0, operation: id, attempt: attempt) }
    }

    /// The attempt timeout: the lead and its hedges are cancelled; the attempt fails as
    /// timed out when its task reports the end.
    private func attemptTimedOut(_ id: AttemptID) {
        cancelTasks(transition(AttemptTimedOut(at: environment.now(), id: id)))
    }

    /// The attempt timeout of attempt `id`: its tasks (the lead, any hedges), to cancel.
    struct AttemptTimedOut: OperationTransition {
        let at: TimeInterval
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> [TransportTask] {
            guard let lead = state.machine.attemptTimedOut(of: id) else { return [] }
            // Hedges racing it time out with it: the timeout is the attempt's, not a copy's.
            let timedOut = TransportError(code: URLError.Code.timedOut.rawValue, message: "timed out (attempt timeout)", timeout: .attempt)
            return [lead] + operation.closeRacers(&state, at: at, error: timedOut)
        }
    }

    /// The read timer fired: the attempt ends if nothing came since ``RequestOptions/readTimeout``
    /// ago, else the timer waits for the rest of the span from the last progress.
    private func checkReadTimeout(_ id: AttemptID) {
        guard let read = options.readTimeout else { return }
        let now = environment.now()
        let error = TransportError(code: URLError.Code.timedOut.rawValue, message: "no byte for \(DurationText.format(read)) (read timeout)", timeout: .read)
        switch transition(ReadTimerFired(read: read, at: now, error: error, id: id)) {
        case .none: break
        case .cancel(let tasks): cancelTasks(tasks)
        case .rearm(let due):
            let timer = environment.clock.schedule(at: due) { [self] in checkReadTimeout(id) }
            if !transition(ReadTimerRearmed(timer: timer, id: id)) { timer.cancel() }
        }
    }

    /// What the read timer found.
    enum ReadCheck {
        case none
        /// A byte came meanwhile: the timer waits for the rest of the span from it.
        case rearm(at: TimeInterval)
        /// Nothing came for the whole span: these tasks are cancelled.
        case cancel([TransportTask])
    }

    /// The read timer of attempt `id` fired at `at`: what it found.
    struct ReadTimerFired: OperationTransition {
        let read: TimeInterval
        let at: TimeInterval
        let error: TransportError
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> ReadCheck {
            switch state.machine.readTimerFired(of: id, read: read, at: at, error: error) {
            case .none: return .none
            case .rearm(let due): return .rearm(at: due)
            case .cancel(let lead): return .cancel([lead] + operation.closeRacers(&state, at: at, error: error))
            }
        }
    }

    /// The read timer made again: kept by attempt `id` in flight (false: it is over).
    struct ReadTimerRearmed: OperationTransition {
        let timer: ScheduledTimer
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Bool {
            state.machine.readTimerRearmed(timer, of: id)
        }
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
    func withCookies(_ request: RequestMessage) -> RequestMessage {
        // An empty jar (most services) costs one lock: no header lookup, no URL parsing.
        guard let jar = environment.cookies, !jar.isEmpty, request.headerFields[.cookie] == nil,
              let header = jar.header(for: request.url) else { return request }
        var request = request
        request.headerFields[.cookie] = header
        return request
    }
}
