import Foundation
import RequestOperations

/// What one operation looks like to the monitor, built only from its events.
public struct OperationRow: Sendable, Equatable {
    /// The monitor's states: the engine's phases, as a person reads them.
    public enum State: String, Sendable, CaseIterable {
        case queued, preparing, running, backoff, held, succeeded, failed, cancelled

        public var isFinished: Bool { self == .succeeded || self == .failed || self == .cancelled }
    }

    /// A span of the operation's life, for the bar and the Timing tab.
    public struct Segment: Sendable, Equatable {
        public enum Kind: Sendable, Equatable { case attempt(Int), wait }
        public var kind: Kind
        public var start: TimeInterval
        /// `nil` while it lasts.
        public var end: TimeInterval?
    }

    /// One attempt as the Retries tab shows it.
    public struct Attempt: Sendable, Equatable {
        public var number: Int
        public var start: TimeInterval
        public var end: TimeInterval?
        public var status: Int?
        public var error: String?
        /// The wait chosen after it, and why (or why it was the last).
        public var delay: TimeInterval?
        public var decision: String?
        /// When its task was made, the request written whole (transports that tell), and
        /// the response began: the attempt's send, wait and receive.
        public var taskAt: TimeInterval?
        public var sentAt: TimeInterval?
        public var responseAt: TimeInterval?
        /// When the request was given a connection, and which (transports that tell): the
        /// time before it is connecting (a new one) or waiting for a free one (reused).
        public var connection: Connection?
    }

    /// The connection an attempt's request went out on: the first one, if it was redirected.
    public struct Connection: Sendable, Equatable {
        public var at: TimeInterval
        public var id: Int
        public var reused: Bool
    }

    public let id: String
    /// Arrival order, for the default sort.
    public let sequence: Int
    public var method = "GET"
    public var url = ""
    public var host = ""
    public var path = ""
    /// What a text filter searches: id, host, path and method, lower-cased UTF-8, kept per
    /// row so a filter over 100,000 rows does not lower-case 300,000 strings each time.
    private(set) var searchKey: [UInt8] = []
    public var requestHeaders: [String: String] = [:]
    /// The body as recorded (whole up to the hub's limit, or named by size).
    public var requestBody: RecordedBody?
    /// Time limits and retry settings, as recorded.
    public var requestOptions: RecordedOptions?
    public var responseHeaders: [String: String] = [:]
    public var state = State.queued
    public var attempt = 1
    public var maxAttempts: Int?
    public var status: Int?
    public var bytes = 0
    public var expectedBytes: Int?
    public var queuedAt: TimeInterval
    public var finishedAt: TimeInterval?
    /// When the current backoff ends, in session time.
    public var retryAt: TimeInterval?
    public var duration: TimeInterval?
    public var lastError: String?
    /// The `finished` event's reason, or the last retry's.
    public var reason: String?
    public var cancelledBy: String?
    /// While held: what it waits for (`batch uploads`, `auth`).
    public var heldBy: String?
    /// `heldBy` in a word, for the table's WAIT column.
    /// When a rate-limit hold ends (session time), for its countdown.
    public var holdUntil: TimeInterval?
    public var heldByShort: String? {
        guard let heldBy else { return nil }
        return heldBy.hasPrefix("batch ") ? "batch" : heldBy
    }
    /// Interceptors that touched the request, with their command, latest attempt only.
    public var interceptedBy: [String] = []
    private var interceptedAttempt = 0
    public var segments: [Segment] = []
    public var attempts: [Attempt] = []
    public var events: [RequestEvent] = []
    /// The host's retry budget refused a retry of it (`retryDenied`).
    public private(set) var deniedRetry = false
    /// `data` events merged away when the operation finished (the Events tab says so).
    public private(set) var mergedDataEvents = 0

    init(id: String, sequence: Int, queuedAt: TimeInterval) {
        self.id = id
        self.sequence = sequence
        self.queuedAt = queuedAt
        refreshSearchKey()
    }

    private mutating func refreshSearchKey() {
        // NUL between fields, so a word never matches across two of them.
        searchKey = Array([id, host, path, method].joined(separator: "\u{0}").lowercased().utf8)
    }

    /// Applies one of its own events.
    mutating func apply(_ event: RequestEvent) {
        events.append(event)
        let t = event.time
        switch event.payload {
        case .queued(let method, let url, let headers, let maxAttempts, let body, let options):
            self.method = method
            self.requestHeaders = headers
            self.maxAttempts = maxAttempts
            self.requestBody = body
            self.requestOptions = options
            setURL(url)
        case .built(let method, let url, let headers, let body):
            self.method = method
            self.requestHeaders = headers
            self.requestBody = body
            setURL(url)
        case .started:
            closeSegment(at: t)
            state = .preparing
            heldBy = nil
            attempt = event.attempt
            retryAt = nil
            segments.append(Segment(kind: .attempt(event.attempt), start: t))
            attempts.append(Attempt(number: event.attempt, start: t))
        case .preparationFailed(let reason):
            lastError = reason
            updateAttempt(number: event.attempt) { $0.error = reason }
        case .sent:
            updateAttempt(number: event.attempt) { $0.sentAt = t }
        case .connection(let id, let reused):
            updateAttempt(number: event.attempt) { $0.connection = $0.connection ?? Connection(at: t, id: id, reused: reused) }
        case .hedged(let racing, _):
            // A copy racing an attempt that has no response yet: an attempt of its own,
            // running alongside (its segment overlaps the one it races).
            attempt = max(attempt, event.attempt)
            attempts.append(Attempt(number: event.attempt, start: t))
            segments.append(Segment(kind: .attempt(event.attempt), start: t))
            updateAttempt(number: racing) { $0.decision = "hedged by attempt \(event.attempt)" }
        case .taskCreated(_, let url):
            updateAttempt(number: event.attempt) { $0.taskAt = $0.taskAt ?? t }
            state = .running
            // A dependent request is built from its parents' results: show what was sent.
            if !url.isEmpty, url != self.url { setURL(url) }
        case .redirect:
            break
        case .response(let status, let headers, let expected):
            self.status = status
            responseHeaders = headers
            expectedBytes = expected
            bytes = 0
            updateAttempt(number: event.attempt) {
                $0.status = status
                $0.responseAt = t
            }
        case .data(let count):
            bytes += count
        case .taskCompleted(let error):
            if let error {
                // A copy cancelled because another answered first is not the row's error.
                if !error.isHedgeCancellation { lastError = "\(error.code) \(error.message)" }
                if error.isHedgeCancellation, let copy = segments.lastIndex(where: { $0.kind == .attempt(event.attempt) && $0.end == nil }) {
                    segments[copy].end = t
                }
                updateAttempt(number: event.attempt) { $0.error = "\(error.code) \(error.message)" }
            }
            updateAttempt(number: event.attempt) { $0.end = t }
        case .validationFailed(let reason):
            updateAttempt(number: event.attempt) { $0.error = $0.error ?? reason }
        case .retryDenied(let reason):
            self.reason = reason
            deniedRetry = true
            updateAttempt(number: event.attempt) { $0.decision = reason }
        case .retryScheduled(let delay, let reason):
            closeSegment(at: t)
            state = .backoff
            retryAt = t + delay
            self.reason = reason
            segments.append(Segment(kind: .wait, start: t))
            // The deciding attempt (with hedges, the one that answered first), else the last.
            updateAttempt(number: attempts.contains { $0.number == event.attempt } ? event.attempt : nil) {
                $0.end = $0.end ?? t
                $0.delay = delay
                $0.decision = reason
            }
        case .earlyRetry(let trigger, let delay):
            retryAt = t + delay
            updateAttempt(number: event.attempt - 1) { $0.decision = ($0.decision ?? "") + "; early retry (\(trigger))" }
        case .intercepted(let by, let command):
            if event.attempt != interceptedAttempt {
                interceptedBy = []
                interceptedAttempt = event.attempt
            }
            interceptedBy.append(command == "execute" ? by : "\(by) (\(command))")
        case .held(let batch):
            closeSegment(at: t)
            state = .held
            heldBy = "batch \(batch)"
            segments.append(Segment(kind: .wait, start: t))
        case .released:
            closeSegment(at: t)
            state = .queued
            heldBy = nil
        case .circuitWaiting(let host):
            closeSegment(at: t)
            state = .held
            heldBy = "circuit"
            segments.append(Segment(kind: .wait, start: t))
            updateAttempt(number: event.attempt - 1) { $0.decision = ($0.decision ?? "") + "; held: circuit breaker of \(host) open" }
        case .rateLimitWaiting(let host, let until):
            closeSegment(at: t)
            state = .held
            heldBy = "rate limit"
            holdUntil = until
            segments.append(Segment(kind: .wait, start: t))
            updateAttempt(number: event.attempt - 1) {
                $0.decision = ($0.decision ?? "") + String(format: "; held %.1fs: %@ asked every client to slow down", max(0, until - t), host)
            }
        case .circuitOpened, .circuitHalfOpen, .circuitClosed, .rateLimited, .retryBudget:
            break
        case .reactorStarted(let name, _), .reactorWaiting(let name):
            closeSegment(at: t)
            state = .held
            heldBy = name
            segments.append(Segment(kind: .wait, start: t))
        case .reactorFinished(_, let outcome):
            closeSegment(at: t)
            state = .queued
            heldBy = nil
            if outcome != "success" { lastError = outcome }
        case .requeued(_, let reason):
            self.reason = reason
            updateAttempt { $0.decision = "requeued: \(reason)" }
        case .cancelled(let by):
            cancelledBy = by
        case .finished(let outcome, let status, _, let duration, let reason):
            closeSegment(at: t)
            state = switch outcome {
            case .success: .succeeded
            case .failure: .failed
            case .cancelled: .cancelled
            }
            if let status { self.status = status }
            self.duration = duration
            self.reason = reason
            finishedAt = t
            retryAt = nil
            heldBy = nil
            // The deciding attempt (with hedges, the one that answered first), else the last.
            updateAttempt(number: attempts.contains { $0.number == event.attempt } ? event.attempt : nil) {
                $0.end = $0.end ?? t
                if outcome != .success, $0.decision == nil { $0.decision = reason }
            }
            // A finished row is kept for hours: one `data` event per run, no spare capacity.
            let (kept, removed) = events.mergingDataRuns()
            events = kept
            mergedDataEvents += removed
        case .other, .missed:
            break
        }
    }

    private mutating func setURL(_ url: String) {
        self.url = url
        let parsed = URLComponents(string: url)
        host = parsed?.host.map { host in parsed?.port.map { "\(host):\($0)" } ?? host } ?? ""
        path = (parsed?.percentEncodedPath ?? "") + (parsed?.percentEncodedQuery.map { "?" + $0 } ?? "")
        if path.isEmpty { path = "/" }
        refreshSearchKey()
    }

    /// Ends what is open: the last segment, and with hedges the copies racing alongside it.
    private mutating func closeSegment(at t: TimeInterval) {
        for index in segments.indices.reversed() {
            guard segments[index].end == nil else { break }
            segments[index].end = t
        }
    }

    private mutating func updateAttempt(number: Int? = nil, _ change: (inout Attempt) -> Void) {
        let found: Int? = if let number { attempts.lastIndex { $0.number == number } } else { attempts.indices.last }
        guard let found else { return }
        change(&attempts[found])
    }

    /// Seconds left in the backoff at session time `now`.
    public func countdown(at now: TimeInterval) -> TimeInterval? {
        if state == .held, heldBy == "rate limit", let holdUntil { return max(0, holdUntil - now) }
        guard state == .backoff, let retryAt else { return nil }
        return max(0, retryAt - now)
    }

    /// Elapsed time: final duration, or time since queued.
    public func elapsed(at now: TimeInterval) -> TimeInterval {
        duration ?? max(0, now - queuedAt)
    }
}
