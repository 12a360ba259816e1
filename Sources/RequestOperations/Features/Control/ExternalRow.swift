import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A row a queue's events show that is not one of its operations — a proxy's tunnel, which
/// carries bytes, not requests; a request the proxy refused itself, never sent — told in the
/// same sequence of events an operation's are, so every reader (the monitor, a recording, HAR,
/// metrics, traces) sees a well-formed row: `queued`, `started`, `taskCreated` when it opens;
/// `response`, `uploaded`, `data` and any other event while it lasts; `taskCompleted` and `finished` (after `cancelled`, when a
/// person cancelled it) when it ends, once.
///
/// The engine makes none itself; whoever opens one owns it (one thread or event loop at a
/// time: it is a value) and adds it to ``ExternalRows`` to make it cancellable.
public struct ExternalRow: Sendable {
    public let id: String
    private let events: EventHub
    /// When `queued` was published: a row's duration counts from it.
    private let openedAt: TimeInterval
    /// How many of the bytes received the `data` events told so far.
    private var toldReceived = 0
    /// The bytes sent so far, as the last `uploaded` event told them.
    private var toldSent = 0
    private var status: Int?
    public private(set) var hasEnded = false

    /// Opens row `id` (publishes `queued`, `started` and `taskCreated`): `method` and `url` as
    /// the client asked (`CONNECT https://host:port`, an upgrade's request).
    public init(id: String, method: String, url: String, headers: [String: String], origin: String?, events: EventHub) {
        var options = RecordedOptions()
        options.origin = origin
        self.init(id: id, method: method, url: url, headers: headers, options: options, events: events)
    }

    /// Opens row `id` with `options` as its `queued` event's (``RecordedOptions/origin``, who
    /// asked; ``RecordedOptions/refusedByProxy`` for a request a proxy refused).
    public init(id: String, method: String, url: String, headers: [String: String], options: RecordedOptions, events: EventHub) {
        self.id = id
        self.events = events
        openedAt = events.publish(operation: id, attempt: 1, .queued(method: method, url: url, headers: headers, maxAttempts: 1, options: options)).time
        events.publish(operation: id, attempt: 1, .started)
        events.publish(operation: id, attempt: 1, .taskCreated(taskIdentifier: 0, url: url))
    }

    /// Any other event of the row (a body, a `response`, `messages`); nothing once it ended.
    public mutating func publish(_ payload: RequestEvent.Payload) {
        guard !hasEnded else { return }
        if case .response(let status, _, _, _) = payload { self.status = status }
        events.publish(operation: id, attempt: 1, payload)
    }

    /// The bytes so far each way: `uploaded` with the total sent and `data` with what came
    /// since the last one, each only when it changed (a caller tells a few times a second).
    public mutating func progress(sent: Int, received: Int) {
        guard !hasEnded else { return }
        if sent != toldSent {
            toldSent = sent
            events.publish(operation: id, attempt: 1, .uploaded(bytes: sent, totalBytes: nil))
        }
        if received != toldReceived {
            events.publish(operation: id, attempt: 1, .data(bytes: received - toldReceived))
            toldReceived = received
        }
    }

    /// The row ends: well (`error` nil) or failed with `error` (`code` says how), with
    /// `reason` as its `finished` event's words (with the status of its `response`, if one came).
    public mutating func end(error: String?, code: URLError.Code = .networkConnectionLost, reason: String) {
        guard !hasEnded else { return }
        hasEnded = true
        let failure = error.map { TransportError(code: code.rawValue, message: $0) }
        events.publish(operation: id, attempt: 1, .taskCompleted(error: failure))
        events.publish(operation: id, attempt: 1, .finished(outcome: failure == nil ? .success : .failure, status: status,
                                                            attempts: 1, duration: events.elapsed() - openedAt, reason: reason))
    }

    /// The row ends failed by the answer it got (its `response`), not for want of one — a
    /// request a proxy refused itself: `taskCompleted` without an error (an answer came whole)
    /// and `finished` a failure, with the answer's status and `reason` as its words, as an
    /// operation whose answer failed validation ends.
    public mutating func fail(reason: String) {
        guard !hasEnded else { return }
        hasEnded = true
        events.publish(operation: id, attempt: 1, .taskCompleted(error: nil))
        events.publish(operation: id, attempt: 1, .finished(outcome: .failure, status: status, attempts: 1,
                                                            duration: events.elapsed() - openedAt, reason: reason))
    }

    /// A person (`who`) cancelled the row: it ends cancelled, with `reason`.
    public mutating func cancelled(by who: String, reason: String) {
        guard !hasEnded else { return }
        hasEnded = true
        events.publish(operation: id, attempt: 1, .cancelled(by: who))
        events.publish(operation: id, attempt: 1, .taskCompleted(error: TransportError(code: URLError.Code.cancelled.rawValue, message: "cancelled by \(who)")))
        events.publish(operation: id, attempt: 1, .finished(outcome: .cancelled, status: nil, attempts: 1, duration: events.elapsed() - openedAt,
                                                            reason: "cancelled by \(who); \(reason)"))
    }
}
