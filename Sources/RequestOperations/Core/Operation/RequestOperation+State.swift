import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension RequestOperation {
    typealias AttemptEnd = AttemptStateMachine.AttemptEnd

    /// The operation's mutable state, guarded by one lock (``RequestOperation/state``).
    ///
    /// What an attempt holds (its ticket, slot, task, timers) lives in the stages of
    /// ``AttemptStateMachine`` and goes with them; what outlives attempts (the records, the
    /// last answer, the deadline, the result) lives here. Every transition gives the
    /// machine an input and keeps the record of what happened; its effects run after it.
    struct State {
        let createdAt: TimeInterval
        var startedAt: TimeInterval?
        var firstAttemptAt: TimeInterval?
        /// Where the attempts are, what each holds, and their numbers: changed only through
        /// its inputs (AttemptStateMachine.swift).
        var machine = AttemptStateMachine()
        var phase: RequestPhase { machine.phase }
        /// The number of the attempt under way or next.
        var attempt: Int { machine.attempt }
        var records: [AttemptRecord] = []
        /// The last answer a server gave (kept across attempts until the next one is sent,
        /// so an operation ended between attempts reports the last status it saw).
        var answer = Answer()

        /// Tasks handed to the transport whose resume runs now, outside the lock, each with
        /// whether a cancel was decided meanwhile: that cancel is done once the resume returned
        /// (a transport is never asked to cancel a task it has not been told to start).
        var resuming: [Int: ResumeRace] = [:]
        var lastDelay: TimeInterval?
        /// What the operation ended with; set in the one transition that finishes the machine
        /// (``RequestOperation/endLocked(_:outcome:error:reason:cancelledBy:)``). Whether it ended
        /// is the machine's to say (``hasEnded``), never this field's.
        var result: RequestResult?

        /// The operation ended: the machine is in its finished stage.
        var hasEnded: Bool { machine.isFinished }
        /// Tasks awaiting ``RequestOperation/finished``, resumed once the result is set.
        var finishWaiters: [CheckedContinuation<RequestResult, Never>] = []
        /// Subscribers whose batch of events a transition began: their delivery is scheduled
        /// after the lock (``RequestOperation/transition(_:)``), never under it.
        var deliveries = EventHub.Deliveries()

        /// The request as built; interceptors start from it on each attempt.
        var request: RequestMessage
        /// What the interceptors made of it for the current attempt.
        var outgoing: RequestMessage?
        /// What the current or last attempt sent, for reactors.
        var sent: RequestMessage?

        /// The last URL whose host was asked for, its host and that as `host:port`: an attempt
        /// wants it up to four times (breaker, gate, retry budget, recovery), and URL parsing
        /// is not cheap in Foundation.
        private var parsedHost: (url: URL?, key: HostKey?, text: String?)?

        init(createdAt: TimeInterval, request: RequestMessage) {
            self.createdAt = createdAt
            self.request = request
        }

        /// `HostKey(url:)`, parsed again only for another URL.
        mutating func hostKey(of url: URL?) -> HostKey? {
            parsed(url).key
        }

        /// `host:port` of what the attempt sends.
        mutating func attemptHost() -> String? {
            parsed((outgoing ?? request).url).text
        }

        private mutating func parsed(_ url: URL?) -> (url: URL?, key: HostKey?, text: String?) {
            if let parsedHost, parsedHost.url == url { return parsedHost }
            let key = HostKey(url: url)
            parsedHost = (url, key, key?.description)
            return parsedHost!
        }

        /// The record of the attempt under way (its lead's, when hedges race it), or the last one.
        ///
        /// Lent and changed in place (`_read`, `_modify`): with `get` and `set`, each
        /// `state.record.sentAt = now` copied the record out, changed the copy and wrote it
        /// back over the old one — nine copies and releases a request (#58).
        var record: AttemptRecord {
            _read { yield records[machine.leadRecord ?? records.count - 1] }
            _modify { yield &records[machine.leadRecord ?? records.count - 1] }
        }

        /// The attempt number `copy`'s events are published with: nil (the lead's) or a racer's.
        func number(of copy: AttemptStateMachine.Copy) -> Int? {
            switch copy {
            case .lead: nil
            case .racer(_, let racer): records[racer.record].number
            }
        }

        /// The number of the attempt under way: the lead's, when hedges race it.
        var leadAttempt: Int { machine.leadRecord.map { records[$0].number } ?? attempt }
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
        /// The first bytes of a body streamed to the caller (``RequestOptions/bodyStream``), up
        /// to ``RequestOptions/responseBodyCap``, kept as they pass for the `responseBody`
        /// event when someone reads events; the rest is never held.
        var keptOfStream = Data()
        /// The file the last successful answer was saved to.
        var savedTo: URL?
        /// The fields after the body, from a transport that reads them (the result's).
        var trailers: HTTPFields?

        mutating func take(_ response: HTTPURLResponse) {
            (status, headers, self.response, head, url, trailers) = (response.statusCode, response.headerDictionary, response, nil, response.url, nil)
        }

        mutating func take(_ head: TransportResponse) {
            (status, headers, response, self.head, url, trailers) = (head.statusCode, head.headers, nil, head, head.url, nil)
        }

        /// `HTTP/1.1`, `HTTP/2.0`: from a transport that says (a `TransportResponse`).
        var httpVersion: String? { head?.httpVersion }

        /// The fields in order, names as sent, from a transport that keeps them (NIO's).
        var fieldsAsReceived: HTTPFields? { head?.fieldsAsReceived }

        /// A gRPC call's status: `grpc-status` of the trailers, or of the head when the answer
        /// was trailers-only (a call that failed before any message). Nil: no gRPC answer.
        var grpcStatus: String? {
            trailers?[Self.grpcStatusName] ?? headers.value(forHTTPHeader: "grpc-status")
        }

        /// Made once: a name is checked as it is made, and this is read at every relayed end.
        private static let grpcStatusName = HTTPField.Name("grpc-status")!

        /// Each value of a header sent more than once, from a transport that keeps them apart.
        var repeatedHeaders: [String: [String]] { head?.repeatedHeaders ?? [:] }

        /// The response as FoundationNetworking's type, for validators and parsers.
        mutating func httpURLResponse() -> HTTPURLResponse? {
            if response == nil, let head { response = head.httpURLResponse() }
            return response
        }
    }
}
