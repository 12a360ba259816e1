import FaultServer
import Foundation
import RequestOperations

/// What a recording says each upstream answered, as the fault server's script
/// (``ScriptedAnswers``): per attempt sent, when it went (from the run's first request), how
/// long the upstream took and what it said — a response (status, headers, the body as far as
/// recorded), a closed or reset connection, or nothing (the attempt timed out).
///
/// A body comes at its recorded pace, as long as it was (filler past the bytes kept), and a
/// body cut off is cut off again (``BodyPace``). A hedged copy cancelled because another
/// answered first, and an attempt cancelled before an answer, had none by then: they get
/// none. Attempts reqtop answered itself (`injected`) are left out: they are not what the
/// upstream said.
package enum RecordedUpstream {
    /// The script, and how many attempts it holds and left out.
    package struct Built {
        package var answers: ScriptedAnswers
        package var attempts: Int
        package var skipped: Int
        /// Per recorded host (`host:port`): its own script, and when it refused connections
        /// (seconds from `origin`; an open end: until the run's end).
        package var hosts: [String: Host] = [:]
    }

    package struct Host: Sendable {
        package var answers: ScriptedAnswers
        package var refused: [(from: TimeInterval, to: TimeInterval?)]
    }

    /// Headers that describe the body as it was sent, where the server sends the decoded body
    /// (as far as recorded): the recorded ones would lie about it. Hop-by-hop headers (and
    /// those a `Connection` names) are left out where the answer is framed again
    /// (``RecordedAnswerFraming``).
    private static let framing: Set<String> = ["content-length", "content-encoding"]

    /// `origin`: the run time that counts as 0 (by default the first request's sending).
    package static func build(_ events: [RequestEvent], origin: TimeInterval? = nil) -> Built {
        struct Attempt {
            var operation: String
            var number: Int
            var method = "GET"
            var url: URL?
            var sentAt: TimeInterval?
            var status: Int?
            var headers: [(String, String)] = []
            var answeredAt: TimeInterval?
            var body: [UInt8] = []
            var error: TransportError?
            /// The `data` events: when (after the response) and how many bytes.
            var parts: [BodyPace.Part] = []
            var totalBytes: Int?
            var promisedBytes: Int?
            var encoded = false
            var injected = false
            var ended = false
            var trailers: [ScriptedAnswers.Answer.Trailer] = []
        }
        var methods: [String: String] = [:]
        /// Operations the program cancelled: an attempt of theirs that never ended was one the
        /// upstream had not answered. Without a cancel (a recording cut off) it tells nothing.
        var cancelled: Set<String> = []
        var attempts: [String: Attempt] = [:]
        var order: [String] = []
        /// Per host, when a probe found it answering again (the `earlyRetry` a probe gave).
        var hostOf: [String: String] = [:]
        var probed: [String: [TimeInterval]] = [:]
        for event in events where !event.operationID.isEmpty {
            let id = event.operationID, key = "\(id)#\(event.attempt)"
            switch event.payload {
            case .queued(let method, let url, _, _, _, _), .built(let method, let url, _, _):
                methods[id] = method
                if let url = URL(string: url) { hostOf[id] = "\(url.host ?? "")\(url.port.map { ":\($0)" } ?? "")" }
            case .earlyRetry("probe", _):
                if let host = hostOf[id] { probed[host, default: []].append(event.time) }
            case .taskCreated(_, let url, _):
                var attempt = Attempt(operation: id, number: event.attempt)
                attempt.method = methods[id] ?? "GET"
                attempt.url = URL(string: url)
                attempt.sentAt = event.time
                attempts[key] = attempt
                order.append(key)
            case .injected:
                attempts[key]?.injected = true
            case .cancelled:
                cancelled.insert(id)
            case .response(let status, let headers, _, _):
                attempts[key]?.status = status
                attempts[key]?.answeredAt = event.time
                attempts[key]?.headers = headers.filter { !framing.contains($0.key.lowercased()) }.sorted { $0.key < $1.key }
                attempts[key]?.promisedBytes = headers.first { $0.key.lowercased() == "content-length" }.flatMap { Int($0.value) }
                attempts[key]?.encoded = headers.contains { $0.key.lowercased() == "content-encoding" && $0.value.lowercased() != "identity" }
            case .headerFields(.response, let fields):
                // A proxy's answer as the upstream said it: served again in that order, repeats apart.
                attempts[key]?.headers = fields.filter { !framing.contains($0.name.canonicalName) }.map { ($0.name.rawName, $0.value) }
            case .data(let bytes):
                if let answered = attempts[key]?.answeredAt { attempts[key]?.parts.append(BodyPace.Part(after: max(0, event.time - answered), bytes: bytes)) }
            case .responseBody(let body, let totalBytes, _, _):
                if case .bytes(let data) = body { attempts[key]?.body = Array(data) }
                attempts[key]?.totalBytes = totalBytes
            case .taskCompleted(let error):
                attempts[key]?.error = error
                attempts[key]?.ended = true
                if attempts[key]?.answeredAt == nil { attempts[key]?.answeredAt = event.time }
            case .trailers(.response, let fields):
                attempts[key]?.trailers = fields.map { ScriptedAnswers.Answer.Trailer(name: $0.name.rawName, value: $0.value) }
            case .earlyRetry, .started, .sent, .connection, .preparationFailed, .redirect, .uploaded, .requestBody, .headerFields(.request, _), .messages,
                 .trailers(.request, _),
                 .validationFailed, .retryScheduled,
                 .retryDenied, .hedged, .breakpoint, .breakpointResolved, .breakpointSet, .breakpointRemoved, .circuitWaiting,
                 .circuitOpened, .circuitHalfOpen, .circuitClosed, .rateLimitWaiting, .rateLimited, .retryBudget, .intercepted,
                 .held, .released, .reactorStarted, .reactorWaiting, .reactorFinished, .requeued, .finished, .missed, .other:
                break
            }
        }
        let start = origin ?? order.compactMap { attempts[$0]?.sentAt }.min() ?? 0
        var script: [ScriptedAnswers.Key: [(host: String, answer: ScriptedAnswers.Answer)]] = [:]
        var kept = 0, skipped = 0
        // Per host, each attempt's time and whether its connection was refused.
        var tries: [String: [(at: TimeInterval, refused: Bool)]] = [:]
        for key in order {
            if let attempt = attempts[key], let url = attempt.url, let sentAt = attempt.sentAt, attempt.ended, !attempt.injected {
                let host = "\(url.host ?? "")\(url.port.map { ":\($0)" } ?? "")"
                let refused = attempt.status == nil && attempt.error.map { URLError.Code(rawValue: $0.code) == .cannotConnectToHost } == true
                let cancelled = attempt.status == nil && attempt.error.map { URLError.Code(rawValue: $0.code) == .cancelled } == true
                if !cancelled { tries[host, default: []].append((sentAt - start, refused)) }
            }
            guard let attempt = attempts[key], let url = attempt.url, let sentAt = attempt.sentAt,
                  attempt.ended || cancelled.contains(attempt.operation),
                  let outcome = outcome(of: attempt.status, attempt.headers, attempt.body, attempt.error), !attempt.injected else {
                skipped += 1
                continue
            }
            let target = url.path.isEmpty ? "/" : url.path
            let full = target + (url.query.map { "?\($0)" } ?? "")
            let host = "\(url.host ?? "")\(url.port.map { ":\($0)" } ?? "")"
            let refused = attempt.status == nil && attempt.error.map { URLError.Code(rawValue: $0.code) == .cannotConnectToHost } == true
            let answer = ScriptedAnswers.Answer(operation: attempt.operation, attempt: attempt.number, at: sentAt - start,
                                                latency: max(0, (attempt.answeredAt ?? sentAt) - sentAt), outcome: outcome, refused: refused,
                                                pace: pace(of: attempt.status, attempt.parts, attempt.body.count, attempt.totalBytes,
                                                           promised: attempt.promisedBytes, encoded: attempt.encoded, attempt.error),
                                                trailers: attempt.trailers)
            script[ScriptedAnswers.Key(method: attempt.method, target: full), default: []].append((host, answer))
            kept += 1
        }
        var hosts: [String: Host] = [:]
        for (host, list) in tries {
            let mine = script.mapValues { $0.filter { $0.host == host } }.filter { !$0.value.isEmpty }
            hosts[host] = Host(answers: ScriptedAnswers(mine),
                               refused: refusals(list.sorted { $0.at < $1.at }, probedAt: (probed[host] ?? []).map { $0 - start }.sorted()))
        }
        return Built(answers: ScriptedAnswers(script), attempts: kept, skipped: skipped, hosts: hosts)
    }

    /// Names, on stderr, each recorded answer that cannot be sent as recorded (a `101`, a
    /// `-1`): `who` then gets a 502 that says why in `X-Reqtop-Unservable`.
    package static func sayUnservable(_ answers: ScriptedAnswers, what who: String) {
        let unservable = answers.unservable
        for (answer, reason) in unservable.prefix(10) {
            ErrorOutput.print("reqtop: \(answer.operation) attempt \(answer.attempt) cannot be answered as recorded: \(reason); \(who) gets a 502 that says so")
        }
        if unservable.count > 10 { ErrorOutput.print("reqtop: … and \(unservable.count - 10) more answers like these") }
    }

    /// The spans a host refused connections: from its first refused attempt after a
    /// connected one (from 0 when it never connected before) until it was back. The
    /// recording shows only that it was back somewhere between its last refused attempt and
    /// its next connected one: the span ends at a probe that found it answering in between
    /// (a probe of the re-run must find it back at the same moment), else halfway, so an
    /// attempt of the re-run a little sooner or later than its recorded one meets the host
    /// as it was then (one at the recorded moment of the first connection found it still
    /// refusing on a clean run, and went a third time).
    private static func refusals(_ tries: [(at: TimeInterval, refused: Bool)], probedAt: [TimeInterval] = []) -> [(from: TimeInterval, to: TimeInterval?)] {
        refusals(tries).map { span in
            guard let back = span.back else { return (span.from, nil) }
            if let probe = probedAt.first(where: { $0 > span.lastRefused && $0 < back }) { return (span.from, probe) }
            return (span.from, (span.lastRefused + back) / 2)
        }
    }

    private static func refusals(_ tries: [(at: TimeInterval, refused: Bool)]) -> [(from: TimeInterval, lastRefused: TimeInterval, back: TimeInterval?)] {
        var spans: [(from: TimeInterval, lastRefused: TimeInterval, back: TimeInterval?)] = []
        var open: (from: TimeInterval, last: TimeInterval)?
        var connectedBefore = false
        for attempt in tries {
            if attempt.refused {
                open = (open?.from ?? (connectedBefore ? attempt.at : 0), attempt.at)
            } else {
                if let span = open { spans.append((span.from, span.last, attempt.at)) }
                open = nil
                connectedBefore = true
            }
        }
        if let span = open { spans.append((span.from, span.last, nil)) }
        return spans
    }

    /// How a response's body came: its parts' rhythm, its whole length, and whether it was
    /// cut off (the attempt failed after its response: the connection lost, reset, or
    /// silent until the attempt timed out). An encoded body is sent decoded, as recorded:
    /// its parts' sizes and promised length were of the encoded bytes, so only its rhythm is kept.
    private static func pace(of status: Int?, _ parts: [BodyPace.Part], _ recorded: Int, _ totalBytes: Int?, promised: Int?, encoded: Bool,
                             _ error: TransportError?) -> BodyPace {
        guard status != nil else { return BodyPace() }
        let cut: BodyPace.Cut? = switch error.map({ URLError.Code(rawValue: $0.code) }) {
        case .networkConnectionLost?: error!.message.lowercased().contains("reset") ? .reset : .close
        case .timedOut?: .stall
        default: nil
        }
        guard !encoded else { return BodyPace(parts: parts, totalBytes: recorded, cut: cut.map { _ in .close }) }
        // Whole: as long as it was. Cancelled mid-body by the client (or over its own limit):
        // the upstream had more to send, as much as its head promised.
        let stoppedHere = error.map { [.cancelled, .dataLengthExceedsMaximum].contains(URLError.Code(rawValue: $0.code)) } == true
        let whole = cut == nil ? max(totalBytes ?? recorded, stoppedHere ? promised ?? 0 : 0, recorded) : nil
        return BodyPace(parts: parts, totalBytes: whole, promisedBytes: promised, cut: cut)
    }

    /// How an attempt ended, as the server can say it again; nil when it tells nothing of the
    /// upstream (an error made here).
    private static func outcome(of status: Int?, _ headers: [(String, String)], _ body: [UInt8], _ error: TransportError?) -> ScriptedAnswers.Answer.Outcome? {
        if let status { return .response(status: status, headers: headers, body: body) }
        // Ended with no word from the transport (the operation was cancelled meanwhile): the
        // upstream had not answered.
        // A copy cancelled because another answered first had no answer by then: silent.
        guard let error, !error.cancelledByHedge else { return .hang }
        switch URLError.Code(rawValue: error.code) {
        // No answer before the attempt gave up or was cancelled: the upstream was silent.
        case .timedOut, .cancelled: return .hang
        case .networkConnectionLost: return error.message.lowercased().contains("reset") ? .reset : .close
        case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .secureConnectionFailed, .badServerResponse: return .close
        default: return nil
        }
    }
}
