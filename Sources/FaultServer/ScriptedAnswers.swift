import Foundation
import Synchronization

/// Answers the fault server gives from a script instead of its routes: what `reqtop serve
/// --from REC` builds from a recording, so each request is answered the way its upstream
/// answered at that moment of the run.
///
/// A request is matched by method, path and query (and by host where the script has several
/// for one path: the `X-Reqtop-Host` header names the recorded `host:port`, else the first).
/// A request that names its operation and attempt (`X-Reqtop-Operation`, `X-Reqtop-Attempt`,
/// as `reqtop whatif` sends them) gets that attempt's recorded answer; others get the Nth
/// recorded answer for their key on their Nth hit. Past the recorded attempts, the answer
/// recorded last before that moment of the run (time runs from the first request), so a run
/// that retries more than the recorded one meets the upstream as it was then — an outage
/// that had ended answers as it did after.
public final class ScriptedAnswers: Sendable {
    /// How one recorded attempt ended.
    public struct Answer: Sendable, Equatable {
        public enum Outcome: Sendable, Equatable {
            /// A response: status, headers, body (as far as recorded).
            case response(status: Int, headers: [(String, String)], body: [UInt8])
            /// The connection closed without an answer (refused, lost).
            case close
            /// The connection reset.
            case reset
            /// No answer at all (the recorded attempt timed out).
            case hang

            public static func == (lhs: Outcome, rhs: Outcome) -> Bool {
                switch (lhs, rhs) {
                case (.response(let a, let ah, let ab), .response(let b, let bh, let bb)):
                    a == b && ab == bb && ah.map { "\($0.0):\($0.1)" } == bh.map { "\($0.0):\($0.1)" }
                case (.close, .close), (.reset, .reset), (.hang, .hang): true
                default: false
                }
            }
        }

        /// The recorded operation and attempt it answered.
        public var operation: String
        public var attempt: Int
        /// When the attempt was sent, seconds after the run's first request.
        public var at: TimeInterval
        /// How long the upstream took to answer.
        public var latency: TimeInterval
        public var outcome: Outcome
        /// The connection was refused: said again by not listening over the same span where
        /// the server can (`reqtop whatif`); an answer of its own only where nothing else is.
        public var refused: Bool
        /// How a response's body came (``BodyPace``): its parts' times and sizes, its whole
        /// length, and how it ended. Empty: the recorded body at once, complete.
        public var pace = BodyPace()
        /// The fields the upstream sent after the body (gRPC's `grpc-status`), sent after it again.
        public var trailers: [Trailer] = []

        /// One field after the body, as recorded.
        public struct Trailer: Sendable, Equatable {
            public var name: String
            public var value: String

            public init(name: String, value: String) {
                (self.name, self.value) = (name, value)
            }
        }

        public init(operation: String, attempt: Int, at: TimeInterval, latency: TimeInterval, outcome: Outcome, refused: Bool = false,
                    pace: BodyPace = BodyPace(), trailers: [Trailer] = []) {
            (self.operation, self.attempt, self.at, self.latency, self.outcome, self.refused) = (operation, attempt, at, latency, outcome, refused)
            self.pace = pace
            self.trailers = trailers
        }
    }

    /// `METHOD path?query` and the recorded host.
    public struct Key: Sendable, Hashable {
        public var method: String
        public var target: String
        public init(method: String, target: String) {
            (self.method, self.target) = (method.uppercased(), target)
        }
    }

    private let answers: [Key: [(host: String, answer: Answer)]]
    private let hits = Mutex<[String: Int]>([:])
    private let start = Mutex<Date?>(nil)

    /// Each answer by its operation and attempt (`op#N`).
    private let byAttempt: [String: Answer]

    /// `answers`: per key, each recorded attempt's host and answer, in the order they were sent.
    public init(_ answers: [Key: [(host: String, answer: Answer)]]) {
        self.answers = answers
        var byAttempt: [String: Answer] = [:]
        for list in answers.values {
            for item in list where byAttempt["\(item.answer.operation)#\(item.answer.attempt)"] == nil {
                byAttempt["\(item.answer.operation)#\(item.answer.attempt)"] = item.answer
            }
        }
        self.byAttempt = byAttempt
    }

    /// The answer recorded for exactly this operation's attempt, or nil.
    public func recorded(operation: String, attempt: Int) -> Answer? {
        byAttempt["\(operation)#\(attempt)"]
    }

    /// Sets the moment the run began (by default: the first request this script answers),
    /// so answers chosen by time line up with a run that sends at the recorded times.
    public func begin(at date: Date) {
        start.withLock { $0 = date }
    }

    /// How far after its recorded time an answer is still taken as the one for now (a run
    /// re-sent at the recorded times arrives a little late).
    static let lateness: TimeInterval = 0.25

    /// An operation id as the `X-Reqtop-Operation` header carries it: percent-encoded, so any
    /// id a recording holds can be sent.
    public static func headerValue(operation id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: unreserved) ?? id
    }

    /// The operation id an `X-Reqtop-Operation` header names.
    public static func operation(headerValue: String) -> String {
        headerValue.removingPercentEncoding ?? headerValue
    }

    private static let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")

    /// Every recorded answer with its key and host, in no particular order.
    public var all: [(key: Key, host: String, answer: Answer)] {
        answers.flatMap { key, list in list.map { (key, $0.host, $0.answer) } }
    }

    /// The recorded answers the server cannot say as recorded, each with why (a status no
    /// server can send as a final answer): it sends a 502 naming the reason in their place.
    public var unservable: [(answer: Answer, reason: String)] {
        all.compactMap { item in
            guard case .response(let status, let headers, let body) = item.answer.outcome,
                  case .unservable(let reason) = RecordedAnswerFraming.frame(status: status, headers: headers, body: body) else { return nil }
            return (item.answer, reason)
        }.sorted { ($0.answer.at, $0.answer.operation, $0.answer.attempt) < ($1.answer.at, $1.answer.operation, $1.answer.attempt) }
    }

    public var isEmpty: Bool { answers.isEmpty }
    public var count: Int { answers.values.reduce(0) { $0 + $1.count } }

    /// The answer for a request, or nil when the recording has none for it.
    public func answer(method: String, target: String, host: String?, operation: String? = nil, attempt: Int? = nil) -> Answer? {
        guard let all = answers[Key(method: method, target: target)], !all.isEmpty else { return nil }
        let hosts = Set(all.map(\.host))
        let chosenHost = host.flatMap { hosts.contains($0) ? $0 : nil } ?? all[0].host
        let recorded = all.filter { $0.host == chosenHost }.map(\.answer)
        // A listening server is a host that connects: its refusals stand only where it never answered.
        let answered = recorded.filter { !$0.refused }
        let mine = answered.isEmpty ? recorded : answered
        let now = start.withLock { start -> TimeInterval in
            if start == nil { start = Date() }
            return Date().timeIntervalSince(start!)
        }
        if let operation, let attempt {
            if let exact = mine.first(where: { $0.operation == operation && $0.attempt == attempt }) { return exact }
            return mine.last { $0.at <= now + Self.lateness } ?? mine.first
        }
        let index = hits.withLock { hits -> Int in
            let key = "\(method) \(chosenHost) \(target)"
            defer { hits[key, default: 0] += 1 }
            return hits[key, default: 0]
        }
        if index < mine.count { return mine[index] }
        return mine.last { $0.at <= now + Self.lateness } ?? mine.first
    }
}
