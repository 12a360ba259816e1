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
/// The file is the public surface, the start and the end; the rest is one extension a
/// concept: `+Attempt` (an attempt's start, the grant, preparation, sending: the transport
/// seam), `+Slot` (the one way to a slot: pause, breaker, gate), `+TransportCallbacks` and
/// `+Response`, `+Body` (what the transport reports), `+Retry` (after an attempt: success or
/// the retry policy), `+FlowControl` (interceptors, batches, reactors), `+Hedge`,
/// `+Breakpoint`, `+Deadline`, `+Resume` (a resume and the cancel that races it), `+State` (what outlives attempts), `+Transition` (the one way
/// into the lock). Where the attempt is, what it holds there and which moves are allowed is
/// `AttemptStateMachine`'s alone: each transition gives it an input and keeps the record;
/// what the input let go of, and anything with an effect (the transport, files, the
/// program's own code), runs after the lock.
///
/// Every state change and every transport callback is published on the environment's
/// ``EventHub``. The operation ends exactly once, as success, failure or cancelled, and then
/// calls its completion handler exactly once.
///
/// Stages and their override points (each with a documented default in ``RequestOptions``):
/// ``RequestOptions/preparer``, ``RequestOptions/validator``,
/// ``RequestOptions/retryPolicy``, ``RequestOptions/challengeHandler``.
///
/// `@unchecked Sendable`: `Operation` is not `Sendable`; all mutable state of this class is
/// one struct behind a lock.
open class RequestOperation: AsyncOperation, @unchecked Sendable {
    /// Unique within the session; the `op` of its events.
    public let id: String
    public let options: RequestOptions
    public let environment: RequestEnvironment
    /// Operations this one depends on; their results feed `build`.
    public let parents: [RequestOperation]
    private let build: RequestBuilder?
    private let completion: (@Sendable (RequestResult) -> Void)?
    /// Everything that changes, behind one lock (see RequestOperation+State.swift).
    let state: Mutex<State>

    /// - Parameters:
    ///   - id: a unique id; by default the session makes one (`op-1`, ...).
    ///   - parents: operations that must succeed first (added as dependencies). If one fails
    ///     or is cancelled, this one is cancelled `by: "dependency"` without running.
    ///   - build: makes the request from the parents' results, once they all succeeded.
    ///   - completion: runs exactly once, when the operation ends, on the thread that ended it.
    public convenience init(request: URLRequest, id: String? = nil, options: RequestOptions = RequestOptions(),
                            environment: RequestEnvironment, after parents: [RequestOperation] = [], build: RequestBuilder? = nil,
                            completion: (@Sendable (RequestResult) -> Void)? = nil) {
        self.init(message: RequestMessage(request), id: id, options: options, environment: environment, after: parents, build: build,
                  completion: completion)
    }

    /// The same for a request given as its fields in order (``RequestMessage``): they are
    /// sent so on a transport that writes its own heads.
    public init(message request: RequestMessage, id: String? = nil, options: RequestOptions = RequestOptions(),
                environment: RequestEnvironment, after parents: [RequestOperation] = [], build: RequestBuilder? = nil,
                completion: (@Sendable (RequestResult) -> Void)? = nil) {
        self.id = id ?? environment.events.makeOperationID()
        // Moved in: below, the stored copy is read (read from the parameter, it was copied
        // into the property and again into the event's record, #58).
        self.options = options
        self.environment = environment
        self.parents = parents
        self.build = build
        self.completion = completion
        self.state = Mutex(State(createdAt: environment.now(), request: request))
        super.init()
        name = self.id
        parents.forEach(addDependency)
        environment.events.post(operation: self.id, attempt: 1,
                                .queued(method: request.method, url: request.url.absoluteString,
                                        headers: request.headerDictionary, maxAttempts: self.options.retryPolicy.attemptLimit,
                                        body: RecordedBody(of: request, limit: environment.events.bodyLimit),
                                        options: RecordedOptions(self.options, parents: parents.map(\.id))))
        if self.options.relaysFieldsAsWritten {
            // The head as its sender wrote it, beside `queued`'s one value per name.
            environment.events.post(operation: self.id, attempt: 1, .headerFields(side: .request, fields: request.headerFields))
        }
        environment.instruments.forEach { $0.operationCreated(self.id, request: request) }
    }

    // MARK: - What callers can read

    /// The request as built (for a dependent operation, once its parents finished), before
    /// interceptors and preparation.
    public var request: URLRequest { message.foundationHead }
    /// The same, as its fields in order, its body with it.
    public var message: RequestMessage { look { $0.request } }

    var host: HostKey? { transition(RequestHost()) }

    /// The host of the request as built (its parse kept for the next ask).
    struct RequestHost: OperationTransition {
        func apply(to state: inout State, of operation: RequestOperation) -> HostKey? {
            state.hostKey(of: state.request.url)
        }
    }

    public var phase: RequestPhase { look { $0.phase } }
    /// The attempt running or next to run, from 1.
    public var attempt: Int { look { $0.attempt } }
    public var attempts: [AttemptRecord] { look { $0.records } }
    /// Set once, when the operation ends.
    public var result: RequestResult? { look { $0.result } }

    // MARK: - Commands

    /// Brings a scheduled retry forward to `delay` from now, as an early retry does (an
    /// `earlyRetry` event with `trigger`); nothing when the retry is due sooner anyway.
    /// Returns false when the operation is not waiting to retry. A what-if re-run replays a
    /// recording's early retries with it.
    @discardableResult
    public func retrySooner(delay: TimeInterval, trigger: String) -> Bool {
        guard let id = look({ state in state.machine.isWaitingToRetry ? state.machine.id : nil }) else { return false }
        hostRecovered(trigger: trigger, delay: max(0, delay), id: id)
        return true
    }

    /// Skips the rest of a backoff and starts the next attempt now. Returns false when the
    /// operation is not waiting to retry.
    @discardableResult
    public func retryNow() -> Bool {
        guard let id = transition(RetryNow()) else { return false }
        beginAttempt(expected: id)
        return true
    }

    /// A person skips the backoff: the attempt that waits, said as an early retry.
    struct RetryNow: OperationTransition {
        func apply(to state: inout State, of operation: RequestOperation) -> AttemptID? {
            guard state.machine.isWaitingToRetry else { return nil }
            operation.publish(&state, .earlyRetry(trigger: "manual", delay: 0))
            return state.machine.id
        }
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
        if transition(Started(at: environment.now())) == .alreadyEnded {
            finish()
            return
        }
        guard buildFromParents() else { return }
        if let deadline = options.deadline {
            // The timers every request sets (this one, the attempt timeout) and the breaker's
            // wake-up hold the operation strongly, not weakly: it cancels them when it ends,
            // which drops their closures (cancel() empties a OneShotTimer, a CircuitWait leaves
            // the breaker's list). A weak reference would give the operation a side table, and
            // every retain and release of it would take the runtime's slow path: 3-5 % of the
            // CPU of a small GET on NIO. Rarer waits (retries, pauses, hedges) keep `weak self`.
            startDeadline(deadline, left: deadline)
        }
        beginAttempt()
    }

    /// The queue started the operation: true when it had ended already (cancelled first).
    struct Started: OperationTransition {
        let at: TimeInterval

        enum Action { case alreadyEnded, runs }

        func apply(to state: inout State, of operation: RequestOperation) -> Action {
            guard !state.hasEnded else { return .alreadyEnded }
            state.startedAt = at
            return .runs
        }
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
            let built = message.updated(by: try build(request, DependencyResults(parents: parents)))
            let body = RecordedBody(of: built, limit: environment.events.bodyLimit)
            transition(Built(request: built, body: body))
            return true
        } catch {
            end(outcome: .failure, error: .preparation("cannot build the request from its parents: \(error)"),
                reason: "cannot build the request from its parents: \(error)", cancelledBy: nil)
            return false
        }
    }

    /// The request made from the parents' results.
    struct Built: OperationTransition {
        let request: RequestMessage
        let body: RecordedBody?

        func apply(to state: inout State, of operation: RequestOperation) {
            state.request = request
            // Under the lock, so a cancel that ended the operation meanwhile is not
            // followed by a `built` after its `finished`.
            guard !state.hasEnded else { return }
            operation.publish(&state, .built(method: request.method, url: request.url.absoluteString,
                                             headers: request.headerDictionary, body: body))
        }
    }

    /// Parses the body of the final successful response; throwing fails the operation
    /// (stage `decoding`). ``TypedRequestOperation`` overrides it.
    /// `response` is made only if asked for.
    func parseBody(_ data: Data, response: () -> HTTPURLResponse?) throws {}

    // MARK: - Ending

    /// Ends the operation (once): tears down whatever stage it is in, publishes the end,
    /// calls the completion handler and finishes the `Operation`.
    func end(outcome: RequestOutcome, error: RequestError.Reason?, reason: String?, cancelledBy: String?) {
        guard let teardown = transition(End(outcome: outcome, error: error, reason: reason, cancelledBy: cancelledBy)) else { return }
        tearDown(teardown)
    }

    /// The operation ends (once): see ``endLocked(_:outcome:error:reason:cancelledBy:)``.
    struct End: OperationTransition {
        let outcome: RequestOutcome
        let error: RequestError.Reason?
        let reason: String?
        let cancelledBy: String?

        func apply(to state: inout State, of operation: RequestOperation) -> Teardown? {
            guard !state.hasEnded else { return nil }
            return operation.endLocked(&state, outcome: outcome, error: error, reason: reason, cancelledBy: cancelledBy)
        }
    }

    /// Undoes what `teardown` holds (outside the lock) and, if it ended the operation,
    /// calls the completion handler.
    func tearDown(_ teardown: Teardown) {
        guard !teardown.isEmpty else { return }
        assertOutsideTransition()
        teardown.perform(cancel: cancelTasks, discard: environment.transport.discard, gate: environment.gate)
        guard let result = teardown.result else { return }
        // Outside the lock: telling the transport there is room may read on at once.
        options.bodyStream?.finish(after: result)
        completed(result)
    }

    /// Closes the record of the attempt that ends (its lead's, with hedges) as `failure`
    /// says; any hedges still racing it are closed too. Bytes not yet told are told first.
    /// Returns the racers' tasks, to cancel.
    func closeRecord(_ state: inout State, failure: AttemptFailure?, at now: TimeInterval) -> [TransportTask] {
        announceData(&state, at: now)
        let lead = state.machine.leadRecord ?? state.records.count - 1
        let racers = closeRacers(&state, at: now, error: .hedgeEnded(with: state.records[lead].number))
        state.records[lead].endedAt = state.records[lead].endedAt ?? now
        state.records[lead].failure = failure
        return racers
    }

    func endLocked(_ state: inout State, outcome: RequestOutcome, error: RequestError.Reason?, reason: String?,
                   cancelledBy: String?) -> Teardown {
        let now = environment.now()
        // The attempt that decided the end: with hedges, the one that answered first.
        let deciding = state.leadAttempt
        var outcome = outcome
        if outcome == .success, options.relaysEveryAnswer, let status = state.answer.status,
           !(200..<300).contains(status) || state.answer.grpcStatus.map({ $0 != "0" }) == true {
            // Passed on as it came, and no success: another status, or a gRPC call that failed
            // (its `grpc-status` in the trailers, or in the head of a trailers-only answer).
            outcome = .relayed
        }
        announceData(&state, at: now)
        var teardown = state.machine.finish(outcome) ?? Teardown()
        // The attempt under way, and any hedges racing it.
        for index in state.records.indices where state.records[index].endedAt == nil && state.records[index].startedAt != nil {
            state.records[index].endedAt = now
        }

        let status = state.answer.status
        let duration = now - (state.startedAt ?? state.createdAt)
        let attempts = state.records.reduce(0) { $0 + ($1.startedAt != nil ? 1 : 0) }
        // The operation's answer and its result share the one exact copy.
        state.answer.body = Self.exactlySized(state.answer.body)
        // A download still being written when the operation ended (cancelled, past its
        // deadline) leaves nothing behind: the in-flight stage's teardown holds it.
        var result = RequestResult(outcome: outcome, status: status, headers: state.answer.headers,
                                   data: state.answer.body, error: error, attempts: state.records, duration: duration)
        result.file = outcome == .success ? state.answer.savedTo : nil
        result.repeatedHeaders = state.answer.repeatedHeaders
        result.trailers = state.answer.trailers
        result.fields = state.answer.fieldsAsReceived
        state.result = result
        assert(state.hasEnded, "an operation's result is set as its machine finishes")
        if let cancelledBy { publish(&state, .cancelled(by: cancelledBy), attempt: deciding) }
        publish(&state, .finished(outcome: outcome, status: status, attempts: attempts, duration: duration, reason: reason), attempt: deciding)
        teardown.result = result
        return teardown
    }

    /// A body read in parts has room to grow (`Data` doubles: a 1 MB download held 1.8 MB,
    /// seen in a soak as 25 mmapped blocks of 1.83 MB); the result, which the queue may keep
    /// for a while, holds an exact copy of a large one.
    static func exactlySized(_ body: Data) -> Data {
        guard body.count >= 64 << 10 else { return body }
        return body.withUnsafeBytes { Data($0) }
    }

    /// Runs the completion handler, then finishes the `Operation` if its queue started it
    /// (one that was cancelled before it started is finished by `execute()`).
    private func completed(_ result: RequestResult) {
        assertOutsideTransition()
        completion?(result)
        // Waiters added from now on find the result set and do not wait.
        let (waiters, started) = transition(TakeFinishWaiters())
        waiters.forEach { $0.resume(returning: result) }
        if started { finish() }
    }

    /// The tasks awaiting the result, taken to be resumed; and whether the queue started the
    /// operation (one that did not is finished by `execute()`).
    struct TakeFinishWaiters: OperationTransition {
        func apply(to state: inout State, of operation: RequestOperation) -> ([CheckedContinuation<RequestResult, Never>], Bool) {
            defer { state.finishWaiters = [] }
            return (state.finishWaiters, state.startedAt != nil)
        }
    }

    /// Publishes `payload` as the operation's, by default for the attempt under way (its
    /// lead when hedges race it).
    /// Called in a transition: the event is appended to the hub's lists now (in the order of
    /// the state's changes), and its delivery is scheduled once the lock is let go of.
    func publish(_ state: inout State, _ payload: consuming RequestEvent.Payload, attempt: Int? = nil) {
        environment.events.append(operation: id, attempt: attempt ?? state.leadAttempt, payload, starting: &state.deliveries)
    }
}
