import Foundation
import HTTPTypes
import RequestEventFormat
import RequestOperations

/// What a row keeps beside the table's fields, and how a finished row keeps it small.
///
/// A running row holds its ``Detail`` as it is. A finished row is ``pack()``ed by the model:
/// its events become ``PackedEvents`` (about 250 bytes for a retried GET instead of 1.4 KiB of
/// events, attempts and headers) and everything else in the detail is read back from them —
/// applied again to a fresh row — when someone looks: ``expanded()`` once per frame for the
/// detail view. The row is a function of its events, so what is read back is what was there.
extension OperationRow {
    struct Detail: Sendable, Equatable {
        var requestHeaders: [String: String] = [:]
        var requestBody: RecordedBody?
        var requestOptions: RecordedOptions?
        var responseHeaders: [String: String] = [:]
        /// The heads as they were said (the `headerFields` events: a proxy's), in order.
        var requestFields: HTTPFields?
        var responseFields: HTTPFields?
        /// The fields after each body (the `trailers` events): gRPC's status is the answer's.
        var requestTrailers: HTTPFields?
        var responseTrailers: HTTPFields?
        var responseBody: ResponseBody?
        /// A relayed WebSocket's whole messages so far, each way (the `messages` events).
        var messages: MessageCounts?
        /// The server's answer a person's answer replaced (stopped after it at a breakpoint):
        /// the attempt and the server's status, kept to be shown as replaced.
        var replaced: ReplacedAnswer?
        var httpVersion: String?
        var expectedBytes: Int?
        /// The request body sent so far by the attempt under way, and its length when known.
        var uploadedBytes = 0
        var uploadTotal: Int?
        var retryAt: TimeInterval?
        var lastError: String?
        var reason: String?
        var cancelledBy: String?
        var heldBy: HoldReason?
        var holdUntil: TimeInterval?
        var interceptedBy: [String] = []
        var interceptedAttempt = 0
        var attempts: [Attempt] = []
        var events: [RequestEvent] = []
    }

    public var requestHeaders: [String: String] { detail(\.requestHeaders) }
    /// The body as recorded (whole up to the hub's limit, or named by size).
    public var requestBody: RecordedBody? { detail(\.requestBody) }
    /// Time limits and retry settings, as recorded.
    public var requestOptions: RecordedOptions? { detail(\.requestOptions) }
    public var responseHeaders: [String: String] { detail(\.responseHeaders) }
    /// The request's fields as its client sent them, in order, names as spelled (a proxy's row).
    public var requestFields: HTTPFields? { detail(\.requestFields) }
    /// The last answer's fields as the server sent them, in order (a proxy's row).
    public var responseFields: HTTPFields? { detail(\.responseFields) }
    public var requestTrailers: HTTPFields? { detail(\.requestTrailers) }
    public var responseTrailers: HTTPFields? { detail(\.responseTrailers) }
    /// The last answer's HTTP version, when the transport said.
    public var httpVersion: String? { detail(\.httpVersion) }
    /// The last answer's body as the `responseBody` event carried it (nil: none came).
    public var responseBody: ResponseBody? { detail(\.responseBody) }
    /// The server's status an answer given at a breakpoint replaced, and on which attempt.
    public var replacedAnswer: ReplacedAnswer? { detail(\.replaced) }

    /// A relayed WebSocket's whole messages so far, each way; nil for anything else.
    public var messages: MessageCounts? { detail(\.messages) }

    public struct MessageCounts: Sendable, Equatable {
        public var fromClient: Int
        public var toClient: Int
    }

    /// The server's answer an answer given at a breakpoint replaced.
    public struct ReplacedAnswer: Sendable, Equatable {
        public var attempt: Int
        public var status: Int
    }
    public var expectedBytes: Int? { detail(\.expectedBytes) }
    public var uploadedBytes: Int { detail(\.uploadedBytes) }
    public var uploadTotal: Int? { detail(\.uploadTotal) }
    public var lastError: String? { detail(\.lastError) }
    /// The `finished` event's reason, or the last retry's.
    public var reason: String? { detail(\.reason) }
    public var cancelledBy: String? { detail(\.cancelledBy) }
    /// Interceptors that touched the request, with their command, latest attempt only.
    public var interceptedBy: [String] { detail(\.interceptedBy) }
    public var attempts: [Attempt] { detail(\.attempts) }
    public var events: [RequestEvent] { detail(\.events) }

    /// While held: what it waits for (`batch uploads`, `auth`). A packed row is finished and
    /// waits for nothing, so this never unpacks (the table asks it of every row it shows).
    public var heldBy: HoldReason? { live.isEmpty ? nil : live[0].heldBy }
    /// `heldBy` in a word, for the table's WAIT column.
    public var heldByShort: String? {
        heldBy?.short
    }

    /// Whether the detail is packed (the row finished and the model packed it).
    public var isPacked: Bool { live.isEmpty }

    /// This row with its detail read back, for a view that reads several detail fields: one
    /// unpacking instead of one per field.
    public func expanded() -> OperationRow {
        var row = self
        row.unpack()
        return row
    }

    /// Packs the detail into its events' bytes (the model does this when the row finishes).
    mutating func pack() {
        guard !live.isEmpty else { return }
        packed = PackedEvents(live[0].events, context: [url])
        live = []
        // Grown by doubling while it ran; exact from here on.
        if segments.capacity > segments.count {
            var exact: [Segment] = []
            exact.reserveCapacity(segments.count)
            exact.append(contentsOf: segments)
            segments = exact
        }
    }

    mutating func unpack() {
        guard live.isEmpty else { return }
        live = [unpackedDetail()]
        packed = nil
    }

    /// One field of the detail: read in place while the row runs (no copy of the whole
    /// detail), read back from the packed events once it finished.
    private func detail<Field>(_ field: KeyPath<Detail, Field>) -> Field {
        live.isEmpty ? unpackedDetail()[keyPath: field] : live[0][keyPath: field]
    }

    private var detail: Detail { live.isEmpty ? unpackedDetail() : live[0] }

    /// The detail of the packed events, applied to a fresh row.
    private func unpackedDetail() -> Detail {
        // The bytes were written by this process's own packer, which reads every kind back
        // (PackedEventsTests); nothing from outside reaches them.
        let events = packed.flatMap { try? $0.events(operationID: id, context: [url]) } ?? []
        var fresh = OperationRow(id: id, sequence: sequence, queuedAt: queuedAt)
        for event in events { fresh.apply(event) }
        return fresh.live[0]
    }
}

extension OperationRow: Equatable {
    /// Rows are equal when they show the same: a packed row equals the row it was.
    public static func == (lhs: OperationRow, rhs: OperationRow) -> Bool {
        lhs.id == rhs.id && lhs.sequence == rhs.sequence && lhs.method == rhs.method && lhs.url == rhs.url
            && lhs.host == rhs.host && lhs.path == rhs.path && lhs.state == rhs.state && lhs.deniedRetry == rhs.deniedRetry && lhs.injected == rhs.injected
            && lhs.mergedDataEvents == rhs.mergedDataEvents && lhs.attempt == rhs.attempt && lhs.maxAttempts == rhs.maxAttempts
            && lhs.status == rhs.status && lhs.bytes == rhs.bytes && lhs.queuedAt == rhs.queuedAt && lhs.finishedAt == rhs.finishedAt
            && lhs.duration == rhs.duration && lhs.segments == rhs.segments && lhs.detail == rhs.detail
    }
}
