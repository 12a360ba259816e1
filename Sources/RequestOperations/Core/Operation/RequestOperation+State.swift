import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension RequestOperation {
    /// The operation's mutable state, guarded by one lock (``RequestOperation/state``).
    ///
    /// What belongs to one attempt lives in ``AttemptState`` and is replaced whole when the
    /// next attempt begins or the attempt closes; what outlives attempts lives here.
    struct State {
        let createdAt: TimeInterval
        var startedAt: TimeInterval?
        var firstAttemptAt: TimeInterval?
        /// Where the attempts are: the phase changes only through it (AttemptStateMachine.swift).
        var machine = AttemptStateMachine()
        var phase: RequestPhase { machine.phase }
        var attempt = 1
        /// Bumped for each attempt, so late timers and callbacks of an earlier one are ignored.
        var token: UInt64 = 0
        var records: [AttemptRecord] = []
        /// The attempt under way: its slot, handles and what the transport told it.
        var current = AttemptState()
        /// The last answer a server gave (kept across attempts until the next one is sent,
        /// so an operation ended between attempts reports the last status it saw).
        var answer = Answer()
        var retryTimer: ScheduledTimer?
        var deadlineTimer: ScheduledTimer?
        /// Tasks handed to the transport whose resume runs now, outside the lock; a cancel
        /// decided meanwhile waits in `cancelOnResume` and is done once the resume returned
        /// (a transport is never asked to cancel a task it has not been told to start).
        var unresumed: Set<Int> = []
        var cancelOnResume: Set<Int> = []
        /// When the deadline's timer fires (the clock's time), while it runs.
        var deadlineAt: TimeInterval?
        /// What was left of the deadline when a breakpoint stopped the operation.
        var deadlineLeft: TimeInterval?
        var observation: RecoveryObservation?
        var lastDelay: TimeInterval?
        var result: RequestResult?
        /// Tasks awaiting ``RequestOperation/finished``, resumed once the result is set.
        var finishWaiters: [CheckedContinuation<RequestResult, Never>] = []

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

        /// The last URL whose host was asked for, and its host: an attempt wants it up to four
        /// times (breaker, gate, retry budget, recovery), and URL parsing is not cheap in Foundation.
        private var parsedHost: (url: URL?, key: HostKey?)?

        init(createdAt: TimeInterval, request: URLRequest) {
            self.createdAt = createdAt
            self.request = request
        }

        /// `HostKey(url:)`, parsed again only for another URL.
        mutating func hostKey(of url: URL?) -> HostKey? {
            if let parsedHost, parsedHost.url == url { return parsedHost.key }
            let key = HostKey(url: url)
            parsedHost = (url, key)
            return key
        }

        /// The operation has not ended and `token` names the attempt under way.
        func isCurrent(token: UInt64) -> Bool {
            result == nil && self.token == token
        }

        /// The operation has not ended and `task` is the attempt's task in flight (its lead,
        /// when hedges race it).
        func isCurrent(task identifier: Int) -> Bool {
            result == nil && current.task?.identifier == identifier
        }

        /// The racing hedge whose task is `identifier`, if the operation has not ended.
        func racer(_ identifier: Int) -> Int? {
            guard result == nil else { return nil }
            return current.racers.firstIndex { $0.task.identifier == identifier }
        }

        /// The record of the attempt under way (its lead's, when hedges race it), or the last one.
        var record: AttemptRecord {
            get { records[current.leadRecord ?? records.count - 1] }
            set { records[current.leadRecord ?? records.count - 1] = newValue }
        }

        /// The number of the attempt under way: the lead's, when hedges race it.
        var leadAttempt: Int { current.leadRecord.map { records[$0].number } ?? attempt }
    }

    /// What one attempt holds while it runs. A new attempt starts from an empty one, and
    /// closing an attempt takes it out whole, so nothing is reset field by field.
    struct AttemptState {
        /// Waiting in the gate for a slot.
        var ticket: ConcurrencyGate.Ticket?
        var slotHeld = false
        /// The host whose per-host slot the attempt takes.
        var slotHost: String?
        var preparation: Task<Void, Never>?
        var task: TransportTask?
        var timer: ScheduledTimer?
        /// The validator's verdict on the response.
        var invalid: AttemptFailure?
        var cancelledAsInvalid = false
        var challengeRefused = false
        /// A redirect the engine would not follow (`RedirectSafety`): the attempt fails with it.
        var redirectRefused: TransportError?
        /// Redirects the lead task followed so far.
        var redirects = 0
        /// Something on this side ended the attempt (the body over its limit, a file that
        /// could not be written): it fails with this.
        var localFailure: TransportError?
        var timedOut = false
        /// Ends the attempt when no byte came for ``RequestOptions/readTimeout``: it fires at
        /// most once per that span, and looks at ``lastProgress`` (a byte does not reschedule it).
        var readTimer: ScheduledTimer?
        /// When the transport last said something (the task made, the request written, a
        /// response, a byte).
        var lastProgress: TimeInterval = 0
        var readTimedOut = false
        /// The answer's size on the wire when it came encoded (gzip, deflate) with a
        /// `Content-Length`: what ``RequestOptions/maxDecodedRatio`` judges its decoded bytes by.
        var encodedLength: Int?
        /// The request body's length, when known, and how much of it the last `uploaded`
        /// event said was sent.
        var uploadTotal: Int?
        var uploadAnnounced = 0
        /// The answer was valid and its body goes to the caller's ``ResponseBodyStream``: the
        /// attempt is committed (a failure from here is not retried: parts were handed over).
        var streaming = false
        /// Body bytes not yet told in a `data` event, and when the last one was published.
        var unannouncedBytes = 0
        var lastDataEventAt: TimeInterval = -.infinity
        /// What the host's circuit breaker let through (told how the attempt went).
        var circuitPass: CircuitPass?
        /// Waiting for the host's circuit breaker.
        var circuitWait: CircuitWait?
        /// Ends the wait for the breaker at its ``CircuitBreaker/maxWait``.
        var circuitTimer: ScheduledTimer?
        /// Ends the wait for the host's rate-limit pause.
        var rateLimitTimer: ScheduledTimer?
        /// `host:port` of the request the attempt sends, once something needed it.
        var host: String?
        /// The record of the attempt whose task is `task` when hedges were sent (nil: the
        /// last record). A hedge that answers first becomes the lead.
        var leadRecord: Int?
        /// Hedges in flight with no response yet (see RequestOperation+Hedge.swift).
        var racers: [Racer] = []
        /// Sends the next hedge.
        var hedgeTimer: ScheduledTimer?
        /// The answer or failure a person chose at a breakpoint, made in the server's place.
        var forcedFault: FaultRule?
        /// Stopped after the answer at a breakpoint: how the attempt had ended, to go on with.
        var stoppedAnswer: (failure: AttemptFailure?, taskError: TransportError?)?
    }

    /// A hedged copy of the attempt's request in flight, racing the lead for a response.
    struct Racer {
        let task: TransportTask
        /// Its index in ``State/records`` (its attempt number is there).
        let record: Int
    }

    /// The response and body of the last attempt that got an answer.
    struct Answer {
        /// The response's status; nil until an HTTP response arrived.
        private(set) var status: Int?
        /// The response's header fields as strings, made once (FoundationNetworking keeps
        /// them as `[AnyHashable: Any]`; the event, the result, reactors and the rate-limit
        /// pushback each read them).
        private(set) var headers: [String: String] = [:]
        /// The response as URLSession's transport gave it, or as made from `head` when first
        /// asked for (see ``TransportResponse`` for why not at once).
        private var response: HTTPURLResponse?
        private var head: TransportResponse?
        /// Where the response came from (after redirects): whose cookies it sets.
        private(set) var url: URL?
        var body = Data()
        /// Where the body goes instead, for a 2xx with a destination.
        var file: ResponseFile?
        /// The file the last successful answer was saved to.
        var savedTo: URL?

        mutating func take(_ response: HTTPURLResponse) {
            (status, headers, self.response, head, url) = (response.statusCode, response.headerDictionary, response, nil, response.url)
        }

        mutating func take(_ head: TransportResponse) {
            (status, headers, response, self.head, url) = (head.statusCode, head.headers, nil, head, head.url)
        }

        /// `HTTP/1.1`, `HTTP/2.0`: from a transport that says (a `TransportResponse`).
        var httpVersion: String? { head?.httpVersion }

        /// The response as FoundationNetworking's type, for validators and parsers.
        mutating func httpURLResponse() -> HTTPURLResponse? {
            if response == nil, let head { response = head.httpURLResponse() }
            return response
        }
    }

    /// What to undo after leaving the lock: side effects never run while holding it.
    struct Teardown {
        var timers: [ScheduledTimer] = []
        var observation: RecoveryObservation?
        var task: TransportTask?
        var preparation: Task<Void, Never>?
        var waiting: Task<Void, Never>?
        var ticket: ConcurrencyGate.Ticket?
        var releaseSlot = false
        /// The host whose per-host slot is given back with the slot.
        var slotHost: String?
        var circuitPass: CircuitPass?
        var circuitWait: CircuitWait?
        /// Hedges still in flight (or that lost the race): cancelled.
        var racers: [TransportTask] = []
        /// A download begun by an operation that ended: removed.
        var partial: ResponseFile?
        var result: RequestResult?

        init(timers: [ScheduledTimer?] = [], observation: RecoveryObservation? = nil) {
            self.timers = timers.compactMap { $0 }
            self.observation = observation
        }

        /// Everything a closed attempt held: its timer, task, preparation, gate ticket and slot.
        init(closing attempt: AttemptState) {
            self.init(timers: [attempt.timer, attempt.circuitTimer, attempt.rateLimitTimer, attempt.hedgeTimer, attempt.readTimer])
            task = attempt.task
            racers = attempt.racers.map(\.task)
            preparation = attempt.preparation
            ticket = attempt.ticket
            releaseSlot = attempt.slotHeld
            slotHost = attempt.slotHeld ? attempt.slotHost : nil
            circuitPass = attempt.circuitPass
            circuitWait = attempt.circuitWait
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
            circuitPass = circuitPass ?? other.circuitPass
            circuitWait = circuitWait ?? other.circuitWait
            racers += other.racers
            partial = partial ?? other.partial
            result = result ?? other.result
        }

        /// `cancel`: how the operation cancels tasks (``RequestOperation/cancelTasks(_:)``).
        func perform(cancel: ([TransportTask]) -> Void, gate: ConcurrencyGate?) {
            timers.forEach { $0.cancel() }
            observation?.cancel()
            cancel((task.map { [$0] } ?? []) + racers)
            preparation?.cancel()
            waiting?.cancel()
            circuitWait?.cancel()
            // A pass not yet told how its attempt went (cancelled, never sent) goes back.
            circuitPass?.giveBack()
            if let ticket, let gate {
                // A waiter already granted holds a slot; its grant sees the end and releases it.
                _ = gate.withdraw(ticket)
            }
            if releaseSlot { gate?.release(host: slotHost) }
            partial?.discard()
        }
    }
}

/// Something running on the operation's behalf that can be stopped: a timer, a task, an
/// observation. ``RequestOperation/keep(_:ifCurrent:in:)`` stores one or stops it.
protocol CancellableHandle {
    func cancel()
}

extension Task: CancellableHandle {}
extension RecoveryObservation: CancellableHandle {}

/// A timer stored through ``RequestOperation/keep(_:ifCurrent:in:)``.
struct TimerHandle: CancellableHandle {
    let timer: ScheduledTimer
    func cancel() { timer.cancel() }
}

extension RequestOperation {
    /// Runs `change` under the lock if `token` is still the current attempt of a running
    /// operation; returns whether it ran.
    @discardableResult
    func withCurrent(_ token: UInt64, _ change: (inout State) -> Void) -> Bool {
        state.withLock { state in
            guard state.isCurrent(token: token) else { return false }
            change(&state)
            return true
        }
    }

    /// Runs `body` under the lock if `token` is still the current attempt of a running
    /// operation; nil otherwise (or when `body` says nil).
    func ifCurrent<T>(_ token: UInt64, _ body: (inout State) -> T?) -> T? {
        state.withLock { state in
            guard state.isCurrent(token: token) else { return nil }
            return body(&state)
        }
    }

    /// Stores `handle` in the state if `token` (nil: any attempt) is still current and the
    /// operation has not ended; otherwise the handle is stale and is cancelled at once.
    func keep<H: CancellableHandle>(_ handle: H, ifCurrent token: UInt64?, in store: (inout State, H) -> Void) {
        let kept = state.withLock { state -> Bool in
            guard state.result == nil, token.map(state.isCurrent(token:)) ?? true else { return false }
            store(&state, handle)
            return true
        }
        if !kept { handle.cancel() }
    }
}
