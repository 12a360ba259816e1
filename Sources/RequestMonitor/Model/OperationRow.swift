import Foundation
import RequestEventFormat
import RequestOperations

/// What one operation looks like to the monitor, built only from its events.
public struct OperationRow: Sendable {
    /// The monitor's states: the engine's phases, as a person reads them.
    public enum State: String, Sendable, CaseIterable {
        /// `relayed`: a transparent proxy passed on an answer other than 2xx as it came (a 304,
        /// a 404): the upstream's answer, not a failure; shown by its status's class.
        case queued, preparing, running, backoff, held, succeeded, failed, cancelled, relayed

        public var isFinished: Bool { self == .succeeded || self == .failed || self == .cancelled || self == .relayed }

        /// Hashed by its place (``rank``), not its name: the model counts rows per state at
        /// every event, and hashing the name's string was a tenth of an event's time.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(rank)
        }
    }

    /// A span of the operation's life, for the bar and the Timing tab.
    ///
    /// Three words (24 bytes, not 40 with an enum and an optional inside): every row keeps a
    /// few of these for as long as it is kept.
    public struct Segment: Sendable, Equatable {
        public enum Kind: Sendable, Equatable { case attempt(Int), wait }
        /// The attempt's number, or `Int.min` for a wait.
        private var number: Int
        public var start: TimeInterval
        /// `-infinity` while it lasts (no event time is infinite: readers refuse it).
        private var until: TimeInterval

        public init(kind: Kind, start: TimeInterval, end: TimeInterval? = nil) {
            number = 0
            until = 0
            self.start = start
            self.kind = kind
            self.end = end
        }

        public var kind: Kind {
            get { number == .min ? .wait : .attempt(number) }
            set {
                switch newValue {
                case .wait: number = .min
                case .attempt(let attempt): number = attempt
                }
            }
        }

        /// `nil` while it lasts.
        public var end: TimeInterval? {
            get { until == -.infinity ? nil : until }
            set { until = newValue ?? -.infinity }
        }
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
        /// The fault injected into this attempt (`status 503`), when one was.
        public var injected: String?
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
    public internal(set) var method = "GET"
    public internal(set) var url = ""
    public internal(set) var host = ""
    /// Who asked for the request when it was not the program itself (a proxy's client:
    /// `curl (pid 4242)`), from the `queued` event's `origin`; in a merged view of several
    /// programs, the event's `program` first (`api 4121`, `proxy 88 ‹curl 4242›`). The PROGRAM column.
    public internal(set) var origin: String?
    /// The path and query, when they are not simply the end of ``url`` (see ``path``).
    var ownPath: String?
    // The four below share two words: the optional's flag byte leaves room for them.
    public internal(set) var maxAttempts: Int?
    public internal(set) var state = State.queued
    /// The host's retry budget refused a retry of it (`retryDenied`).
    public internal(set) var deniedRetry = false
    /// reqtop injected a fault into one of its attempts (`injected`): the table's STAT says
    /// so with `!`, since what it shows is not all the server's.
    public internal(set) var injected = false
    /// Bumped when the text a filter searches changes (its id, host, path or method): the
    /// model keeps that text for every row (``SearchText``) and looks again when it moves.
    var searchTextVersion: UInt8 = 0
    /// `data` events merged into the one before them (the Events tab says so).
    /// 32 bits, so it shares a word with the two fields above.
    var dataEventsMerged: Int32 = 0
    public var mergedDataEvents: Int { Int(dataEventsMerged) }
    public internal(set) var attempt = 1
    public internal(set) var status: Int?
    /// A gRPC call's `grpc-status`, -1 for none (16 bits, in the word the optional above
    /// leaves room in, before ``pathStart``): see ``grpcStatus``.
    var grpcCode: Int16 = -1
    /// Where ``path`` starts in ``url``'s UTF-8 when it is the end of it (in the word the
    /// optional above leaves room in).
    var pathStart: Int32 = 0
    public internal(set) var bytes = 0
    public let queuedAt: TimeInterval
    /// NaN for none (no event time is NaN: readers refuse it): a word instead of two.
    var finishTime = Double.nan
    var finalDuration = Double.nan
    /// A gRPC call's `grpc-status` (a trailer, or the head of a trailers-only answer): the
    /// table's STAT shows it (`g7`) in place of the HTTP status, which is 200 for every call.
    public internal(set) var grpcStatus: Int? {
        get { grpcCode < 0 ? nil : Int(grpcCode) }
        set { grpcCode = newValue.map { Int16(clamping: $0) } ?? -1 }
    }
    public var finishedAt: TimeInterval? { finishTime.isNaN ? nil : finishTime }
    public var duration: TimeInterval? { finalDuration.isNaN ? nil : finalDuration }
    public internal(set) var segments: [Segment] = []
    /// The rest — what the detail view shows, and what only a running row needs — while the
    /// operation runs: one element, so a row in the table costs a pointer for it.
    var live: [Detail] = [Detail()]
    /// Once ``pack()``ed (the model packs finished rows): its events in a few bytes, from
    /// which the detail is read back when someone looks.
    var packed: PackedEvents?

    init(id: String, sequence: Int, queuedAt: TimeInterval) {
        self.id = id
        self.sequence = sequence
        self.queuedAt = queuedAt
    }

    /// The path and query, as the table shows them: usually the end of the URL, kept once.
    public var path: String {
        if let ownPath { return ownPath }
        // By scalars: the path starts on one, not always on a character's first.
        return String(Substring(url.unicodeScalars[url.utf8.index(url.utf8.startIndex, offsetBy: Int(pathStart))...]))
    }

    /// What a text filter searches: id, host, path and method, lower-cased, NUL between them
    /// so a word never matches across two of them.
    var searchText: String {
        [id, host, path, method].joined(separator: "\u{0}").lowercased()
    }

    /// Seconds left in the backoff (or a rate-limit hold) at session time `now`.
    public func countdown(at now: TimeInterval) -> TimeInterval? {
        guard !live.isEmpty else { return nil }
        if state == .held, live[0].heldBy == .rateLimit, let holdUntil = live[0].holdUntil { return max(0, holdUntil - now) }
        guard state == .backoff, let retryAt = live[0].retryAt else { return nil }
        return max(0, retryAt - now)
    }

    /// Elapsed time on one clock, from when it was queued: to its end once finished, else to
    /// now. (The engine's `duration` counts from the first start: a row held before it went
    /// read 1m52s, then 1m30s once answered.)
    public func elapsed(at now: TimeInterval) -> TimeInterval {
        max(0, (finishedAt ?? now) - queuedAt)
    }
}
