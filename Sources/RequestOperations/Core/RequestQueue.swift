import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// What every operation of one session shares: the URLSession, the event hub (and its
/// clock), the concurrency gate, early retry, and the random source for jitter.
///
/// A value whose fields live in one shared, immutable box: every operation keeps its
/// environment and passes it on, and a copy of sixteen references (three of them
/// existentials) was sixteen retains and releases each time (#58); a copy is now one.
public struct RequestEnvironment: Sendable {
    /// The fields, set once at `init`; `Sendable` as every field is a `let` of a `Sendable` type.
    private final class Storage: Sendable {
        let session: SharedSession
        let events: EventHub
        let gate: ConcurrencyGate?
        let recovery: HostRecoveryCenter?
        let random: RandomSource
        let transport: RequestTransport
        let faultInjection: FaultInjectingTransport
        let faults: FaultRules
        let breakpoints: Breakpoints
        let retryBudget: RetryBudget?
        let circuitBreaker: CircuitBreaker?
        let rateLimits: RateLimitPushback?
        let instruments: [RequestInstrument]
        let cookies: CookieJar?
        let clock: RequestClock

        init(session: SharedSession, transport: RequestTransport?, events: EventHub, gate: ConcurrencyGate?,
             recovery: HostRecoveryCenter?, random: RandomSource, retryBudget: RetryBudget?,
             circuitBreaker: CircuitBreaker?, rateLimits: RateLimitPushback?, instruments: [RequestInstrument],
             cookies: CookieJar?) {
            self.instruments = instruments
            self.cookies = cookies
            self.session = session
            self.rateLimits = rateLimits
            self.retryBudget = retryBudget
            self.circuitBreaker = circuitBreaker
            let faults = FaultRules(random: random)
            self.faults = faults
            let injecting = FaultInjectingTransport(base: transport ?? session, rules: faults, clock: events.clock)
            self.faultInjection = injecting
            self.transport = injecting
            self.breakpoints = Breakpoints(events: events)
            self.events = events
            self.clock = events.clock
            self.gate = gate
            self.recovery = recovery
            self.random = random
        }
    }

    private let storage: Storage

    public var session: SharedSession { storage.session }
    public var events: EventHub { storage.events }
    /// `nil`: no limit of the engine's own (the `OperationQueue`'s limit, if any, applies).
    public var gate: ConcurrencyGate? { storage.gate }
    /// `nil`: no early retry.
    public var recovery: HostRecoveryCenter? { storage.recovery }
    public var random: RandomSource { storage.random }
    /// What carries an attempt's bytes: `session` unless another transport was chosen, with
    /// ``faults`` applied at the seam.
    public var transport: RequestTransport { storage.transport }
    /// The same transport, as the wrapper the engine was given for injecting faults: an
    /// answer made at a breakpoint goes through it, typed, never found by a downcast.
    var faultInjection: FaultInjectingTransport { storage.faultInjection }
    /// Failures injected into this environment's requests (none until some are added).
    public var faults: FaultRules { storage.faults }
    /// Where operations stop before an attempt is sent (none until some are added).
    public var breakpoints: Breakpoints { storage.breakpoints }
    /// Caps retries per host; `nil`: no cap but the retry policy's.
    public var retryBudget: RetryBudget? { storage.retryBudget }
    /// Stops sending to failing hosts; `nil`: no breakers.
    public var circuitBreaker: CircuitBreaker? { storage.circuitBreaker }
    /// Makes a host's "slow down" hold every request to it; `nil`: only the one answered waits.
    public var rateLimits: RateLimitPushback? { storage.rateLimits }
    /// Told of each operation made and each request sent (tracing); none by default.
    public var instruments: [RequestInstrument] { storage.instruments }
    /// The cookies servers set, sent back on later requests; `nil`: none kept.
    public var cookies: CookieJar? { storage.cookies }

    /// The event hub's clock (kept here too: an operation reads it a dozen times a request).
    public var clock: RequestClock { storage.clock }

    /// The clock's time, read in place: through ``clock`` each read copied the clock out of
    /// the environment's box and released it (ten times a request, #58).
    func now() -> TimeInterval {
        storage.clock.now()
    }

    public init(session: SharedSession = .shared, transport: RequestTransport? = nil, events: EventHub = EventHub(),
                gate: ConcurrencyGate? = nil, recovery: HostRecoveryCenter? = nil, random: RandomSource = SystemRandomSource(),
                retryBudget: RetryBudget? = nil, circuitBreaker: CircuitBreaker? = nil, rateLimits: RateLimitPushback? = nil,
                instruments: [RequestInstrument] = [], cookies: CookieJar? = CookieJar()) {
        storage = Storage(session: session, transport: transport, events: events, gate: gate, recovery: recovery, random: random,
                          retryBudget: retryBudget, circuitBreaker: circuitBreaker, rateLimits: rateLimits,
                          instruments: instruments, cookies: cookies)
    }
}

/// The usual way in: an `OperationQueue` for request operations, with one environment.
///
/// The `OperationQueue` itself runs every ready operation at once; the request limit is
/// the ``ConcurrencyGate``, which operations hold only while an attempt runs, never while
/// they wait out a backoff. Dependencies between operations work as with any `Operation`.
///
/// On a transport with an ``OperationStarter`` (NIO's event loops) the queue starts a request
/// operation itself when nothing stands in the way — no dependencies, the `OperationQueue`
/// neither suspended nor limited — since on Linux the `OperationQueue`'s scheduling costs
/// more than the request. Such an operation is not in `operationQueue.operations`; it is
/// in ``operations``, and ``waitUntilAllOperationsAreFinished()`` and ``cancelAll(by:)`` see it.
///
/// ```swift
/// let queue = RequestQueue(maxConcurrentRequests: 4)
/// let subscription = queue.events.subscribe(each: { print($0) })
/// let operation = queue.add(URLRequest(url: url), options: RequestOptions(
///     retryPolicy: ExponentialBackoffRetryPolicy(maxAttempts: 5)))
/// queue.waitUntilAllOperationsAreFinished()
/// print(operation.result!.outcome)
/// ```
public final class RequestQueue: Sendable {
    public let environment: RequestEnvironment
    public let operationQueue: OperationQueue
    /// Operations added lately, by id, so commands can find one that has finished.
    private let recent = Mutex(RecentOperations())
    /// Operations this queue started itself, on its transport's ``OperationStarter``.
    private let selfStarted = SelfStartedOperations()

    public var events: EventHub { environment.events }

    /// - Parameters:
    ///   - maxConcurrentRequests: requests in flight at once.
    ///   - maxConcurrentRequestsPerHost: requests in flight at once to one host (`nil`: no
    ///     limit of its own). Waiters are served by their `queuePriority`.
    ///   - session: the shared session (one per process is the point).
    ///   - transport: what carries the bytes; nil: `session` (URLSession). The
    ///     `RequestTransportNIO` module's `NIOTransport.shared` runs on AsyncHTTPClient.
    ///   - clock, random: inject ``ManualClock`` / ``SeededRandomSource`` for exact tests.
    ///   - retryBudget: retries per host at most 20 % of its requests in 10 s plus 10 a
    ///     second, by default (``RatioRetryBudget``); `nil` turns the cap off.
    ///   - circuitBreaker: a breaker per host, by default (``HostCircuitBreaker``: open at
    ///     50 % failures of at least 20 attempts in 10 s or 5 attempts in a row without an
    ///     answer, for 5 s doubling to 60 s, then one probe); `nil` turns breakers off.
    ///   - rateLimits: a host's `Retry-After` (429/503) and rate-limit headers hold every
    ///     request to it, by default (``HostRateLimits``, pauses up to `maxPause`); `nil`: off.
    ///   - instruments: told of each operation made and each request sent, and given the
    ///     queue's events (``RequestInstrument``: a tracer); none by default.
    ///   - cookies: where the cookies servers set are kept and sent back from: by default a
    ///     jar of this queue's own, in memory (``CookieJar``); `nil` keeps none.
    public init(maxConcurrentRequests: Int = 6, maxConcurrentRequestsPerHost: Int? = nil, session: SharedSession = .shared,
                transport: RequestTransport? = nil, clock: RequestClock = SystemClock(),
                random: RandomSource = SystemRandomSource(), earlyRetry: HostRecoveryCenter.Options? = .init(),
                probe: HostProbe = TCPConnectProbe(), retryBudget: RatioRetryBudget.Options? = .init(),
                circuitBreaker: HostCircuitBreaker.Options? = .init(), rateLimits: Bool = true,
                instruments: [RequestInstrument] = [], cookies: CookieJar? = CookieJar()) {
        let events = EventHub(clock: clock)
        environment = RequestEnvironment(
            session: session,
            transport: transport,
            events: events,
            gate: ConcurrencyGate(limit: maxConcurrentRequests, perHostLimit: maxConcurrentRequestsPerHost,
                                  handoff: transport?.startsNextRequestInCallbacks == true ? nil : DispatchQueue.global(qos: .userInitiated)),
            recovery: earlyRetry.map { HostRecoveryCenter(clock: clock, random: random, probe: probe, options: $0) },
            random: random,
            retryBudget: retryBudget.map { RatioRetryBudget(options: $0, clock: clock) },
            circuitBreaker: circuitBreaker.map { HostCircuitBreaker(options: $0, clock: clock, events: events) },
            rateLimits: rateLimits ? HostRateLimits(clock: clock, events: events) : nil,
            instruments: instruments,
            cookies: cookies)
        instruments.forEach { $0.attach(to: events) }
        operationQueue = OperationQueue()
        operationQueue.name = "reqtop.requests"
        // A breakpoint removed or turned off lets the operations stopped at it go on.
        environment.breakpoints.onRelease { [weak self] id in
            self?.operations.filter { $0.phase == .stoppedAtBreakpoint(id) }.forEach { $0.resolveBreakpoint(.proceed, by: "breakpoint removed") }
        }
    }

    /// Failures to inject into this queue's requests while it runs (``FaultRules``).
    public var faults: FaultRules { environment.faults }

    /// Where this queue's operations stop before an attempt is sent (``Breakpoints``).
    public var breakpoints: Breakpoints { environment.breakpoints }

    /// Rows this queue's events show that are not its operations (a proxy's tunnels), and how
    /// a person's cancel reaches them (``ExternalRows``).
    public let externalRows = ExternalRows()

    /// Creates an operation for `request` and adds it to the queue.
    @discardableResult
    public func add(_ request: URLRequest, id: String? = nil, options: consuming RequestOptions = RequestOptions(),
                    dependencies: [Operation] = [], completion: (@Sendable (RequestResult) -> Void)? = nil) -> RequestOperation {
        add(RequestMessage(request), id: id, options: options, dependencies: dependencies, completion: completion)
    }

    /// The same for a request given as its fields in order (``RequestMessage``).
    @discardableResult
    public func add(_ request: RequestMessage, id: String? = nil, options: consuming RequestOptions = RequestOptions(),
                    dependencies: [Operation] = [], completion: (@Sendable (RequestResult) -> Void)? = nil) -> RequestOperation {
        // `options` consumed, here and above: handed on to the operation, not copied (#58).
        let operation = RequestOperation(message: request, id: id, options: options, environment: environment, completion: completion)
        dependencies.forEach(operation.addDependency)
        add(operation)
        return operation
    }

    /// Adds an operation made elsewhere (it should share this queue's environment).
    public func add(_ operation: Operation) {
        guard let request = operation as? RequestOperation else {
            operationQueue.addOperation(operation)
            return
        }
        recent.withLock { $0.add(request) }
        request.whenFinished { [weak self, unowned request] in
            let bodyBytes = request.result?.data.count ?? 0
            self?.recent.withLock { $0.finished(request, bodyBytes: bodyBytes) }
        }
        if let starter = environment.transport.operationStarter, request.dependencies.isEmpty, !operationQueue.isSuspended,
           operationQueue.maxConcurrentOperationCount == OperationQueue.defaultMaxConcurrentOperationCount {
            selfStarted.start(request, on: starter)
        } else {
            operationQueue.addOperation(operation)
        }
    }

    /// The operation with `id`, running or among the last 2,000 added.
    public func operation(withID id: String) -> RequestOperation? {
        recent.withLock { $0.byID[id] } ?? operations.first { $0.id == id }
    }

    /// A finished operation cannot run again (an `Operation` runs once): this adds a new one
    /// with the same request and options, as `id~2`, `id~3`, ...
    @discardableResult
    public func runAgain(_ operation: RequestOperation) -> RequestOperation {
        let base = operation.id.split(separator: "~").first.map(String.init) ?? operation.id
        let id = recent.withLock { recent in
            var number = 2
            while recent.byID["\(base)~\(number)"] != nil { number += 1 }
            return "\(base)~\(number)"
        }
        let again = RequestOperation(message: operation.message, id: id, options: operation.options, environment: operation.environment)
        add(again)
        return again
    }

    /// Sends `request`, a changed copy of `operation`'s (a person edited it), as `id~edit1`,
    /// `id~edit2`, ..., with the operation's options (its retry policy, validators,
    /// interceptors) and the time limits given.
    @discardableResult
    public func runEdited(_ operation: RequestOperation, request: URLRequest, attemptTimeout: TimeInterval?,
                          deadline: TimeInterval?) -> RequestOperation {
        let base = operation.id.split(separator: "~").first.map(String.init) ?? operation.id
        let id = recent.withLock { recent in
            var number = 1
            while recent.byID["\(base)~edit\(number)"] != nil { number += 1 }
            return "\(base)~edit\(number)"
        }
        var options = operation.options
        if let attemptTimeout { options.attemptTimeout = attemptTimeout }
        if let deadline { options.deadline = deadline }
        // The fields a person left alone keep their order and spelling.
        let edited = RequestOperation(message: operation.message.updated(by: request), id: id, options: options, environment: operation.environment)
        add(edited)
        return edited
    }

    /// Request operations not yet finished.
    public var operations: [RequestOperation] {
        operationQueue.operations.compactMap { $0 as? RequestOperation } + selfStarted.running
    }

    /// Cancels every operation, in whatever stage (`by` says who, in the events).
    public func cancelAll(by who: String = "cancelAll") {
        for operation in operations {
            operation.cancel(by: who)
        }
    }

    /// While suspended no attempt starts (running ones go on, backoffs keep counting).
    public var isSuspended: Bool {
        get { environment.gate?.isPaused ?? false }
        set { environment.gate?.isPaused = newValue }
    }

    public func waitUntilAllOperationsAreFinished() {
        // Either kind may add the other's (a completion handler adding the next request).
        repeat {
            operationQueue.waitUntilAllOperationsAreFinished()
            selfStarted.waitUntilAllAreFinished()
        } while operationQueue.operationCount > 0 || !selfStarted.isEmpty
    }
}

/// The last operations a queue took, by id; the oldest finished ones are forgotten first —
/// past 2,000, or once the bodies the finished ones hold pass 16 MiB (the demo downloads
/// 1 MB a wave: 2,000 operations held ~50 MB of bodies nobody would read again). Running
/// ones are always kept.
///
/// The queue tells it of each operation that finishes (``finished(_:bodyBytes:)``), so
/// forgetting costs nothing per add. (It used to look through every kept operation, asking
/// each for its result, every 64 adds and again past the limit: with 20,000 operations
/// added at once that was a sixth of a benchmark's time.)
private struct RecentOperations {
    static let limit = 2_000
    static let bodyBytesLimit = 16 << 20
    var byID: [String: RequestOperation] = [:]
    /// Finished operations in the order they finished, from `head`, with their body sizes.
    private var finished: [(operation: RequestOperation, bytes: Int)] = []
    private var head = 0
    private var bodyBytesHeld = 0

    mutating func add(_ operation: RequestOperation) {
        byID[operation.id] = operation
    }

    /// `operation` ended: it is the newest finished one; the oldest go while more than
    /// `limit` are kept or their bodies pass `bodyBytesLimit`.
    mutating func finished(_ operation: RequestOperation, bodyBytes: Int) {
        guard byID[operation.id] === operation else { return }
        finished.append((operation, bodyBytes))
        bodyBytesHeld += bodyBytes
        while byID.count > Self.limit || bodyBytesHeld > Self.bodyBytesLimit, head < finished.count {
            let oldest = finished[head]
            head += 1
            bodyBytesHeld -= oldest.bytes
            // Its id may have been taken by a newer operation since (ids are the caller's).
            if byID[oldest.operation.id] === oldest.operation { byID[oldest.operation.id] = nil }
        }
        if head > 64, head * 2 > finished.count {
            finished.removeFirst(head)
            head = 0
        }
    }
}
