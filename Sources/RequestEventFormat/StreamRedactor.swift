import Foundation
import HTTPTypes
import RequestOperations
import Synchronization

/// A ``Redactor`` for one stream of events (one output: stdout, a recording, a HAR, the
/// endpoint, the monitor) that also remembers, per operation, the values it took out of the
/// request, and takes those values out wherever they come back in the same operation's later
/// events: a server that echoes `Authorization` into `WWW-Authenticate`, `X-Echo-Auth`, a
/// `Location` or an error message would otherwise put the secret in the clear.
///
/// Learnt from `queued` and `built`: the values of credential headers (the whole value, and
/// the credential after an auth scheme such as `Bearer`; each cookie's value), the userinfo
/// of the URL and its secret query and fragment values (as written and percent-decoded).
/// Values shorter than ``minimumLength`` are not remembered: scrubbing `1` or `ok` from every
/// later string would hide more than it protects. An operation is forgotten at `finished`,
/// and at most ``operationLimit`` are remembered (the oldest go first).
public final class StreamRedactor: Sendable {
    public let rules: Redactor
    public static let minimumLength = 6
    public static let operationLimit = 10_000

    private struct Memory {
        var secrets: [String: [String]] = [:]
        var order = RecentKeys<String>(limit: StreamRedactor.operationLimit)
    }

    private let memory = Mutex(Memory())

    /// Secrets taken out of answers: scrubbed from every later event of any operation.
    private let derived: DerivedSecrets
    /// The process's (``DerivedSecrets/shared``): what a program put in a request from an answer.
    private let given: DerivedSecrets

    public convenience init(_ rules: Redactor = Redactor()) {
        self.init(rules, derivedFrom: .shared)
    }

    /// - Parameter given: the values a program put in its requests from answers
    ///   (``DerivedSecrets/shared`` by default).
    public init(_ rules: Redactor, derivedFrom given: DerivedSecrets) {
        self.rules = rules
        self.given = given
        derived = DerivedSecrets()
    }

    public func redact(_ batch: [RequestEvent]) -> [RequestEvent] {
        batch.map(redact)
    }

    public func redact(_ event: RequestEvent) -> RequestEvent {
        // Half a proxied request's events carry no text (`started`, `sent`, `data`, a
        // `connection`): given back as they are, with no copy made by the rules, no look-up of
        // the operation's secrets and no lock taken for the answers' (#58).
        guard Self.mayHoldText(event.payload) else { return event }
        switch event.payload {
        case .queued(_, let url, let headers, _, let body, _), .built(_, let url, let headers, let body):
            learn(secrets(url: url, headers: headers) + rules.secretValues(body: body, headers: headers), for: event.operationID)
        case .responseBody(.bytes(let data), _, _, let type):
            // A token in an answer (`access_token`, a session id) is secret wherever it goes next.
            for value in rules.secretValues(body: .bytes(data), headers: type.map { ["Content-Type": $0] } ?? [:], leaves: true) {
                derived.add(value)
            }
        default:
            break
        }
        var redacted = rules.redact(event)
        var known = memory.withLock { memory -> [String] in
            let known = memory.secrets[event.operationID]
            if case .finished = event.payload { memory.secrets[event.operationID] = nil }
            return known ?? []
        }
        let fromAnswers = derived.all, fromProgram = given.all
        if !fromAnswers.isEmpty || !fromProgram.isEmpty {
            // Each list is longest first already; merged only when more than one has values.
            let lists = [known, fromAnswers, fromProgram].filter { !$0.isEmpty }
            known = lists.count == 1 ? lists[0] : Array(Set(lists.joined())).sorted { $0.count > $1.count }
        }
        if !known.isEmpty {
            redacted.payload = Self.scrub(redacted.payload, of: known)
        }
        return redacted
    }

    /// Whether the rules or the scrub may change `payload`, or it is one the redactor learns
    /// from or forgets at (`finished`). Only the kinds that neither ``Redactor/redact(_:)`` nor
    /// ``scrub(_:of:)`` touches are listed: a kind added later goes the whole way by default.
    static func mayHoldText(_ payload: RequestEvent.Payload) -> Bool {
        switch payload {
        case .started, .sent, .data, .uploaded, .messages, .connection, .taskCompleted(error: nil), .hedged, .missed,
             .breakpointRemoved:
            return false
        default:
            return true
        }
    }

    private func learn(_ values: [String], for operation: String) {
        let values = values.filter { $0.count >= Self.minimumLength && $0 != Redactor.placeholder }
        guard !values.isEmpty else { return }
        memory.withLock { memory in
            if memory.secrets[operation] == nil, let oldest = memory.order.append(operation) {
                memory.secrets[oldest] = nil
            }
            // Longest first, so a value that holds another is replaced whole.
            memory.secrets[operation] = Set((memory.secrets[operation] ?? []) + values).sorted { $0.count > $1.count }
        }
    }

    /// The values the rules take out of a request: what may come back.
    func secrets(url: String, headers: [String: String]) -> [String] {
        var found: [String] = []
        for (name, value) in headers where rules.isSecretHeader(name) {
            found.append(value)
            let lower = name.lowercased()
            if lower == "cookie" || lower == "set-cookie" {
                // `Cookie: a=1; sid=abc`: each value.
                for pair in value.split(separator: ";") {
                    if let equals = pair.firstIndex(of: "=") { found.append(String(pair[pair.index(after: equals)...])) }
                }
            } else if let space = value.firstIndex(of: " ") {
                // `Bearer abc`, `Basic dXNlcjpwdw==`: the credential alone comes back too.
                found.append(String(value[value.index(after: space)...]).trimmingCharacters(in: .whitespaces))
            }
        }
        found += rules.secretValues(url: url)
        return found
    }

    static func scrub(_ payload: RequestEvent.Payload, of secrets: [String]) -> RequestEvent.Payload {
        func text(_ value: String) -> String { scrub(value, of: secrets, with: Redactor.placeholder) }
        func url(_ value: String) -> String { scrub(value, of: secrets, with: Redactor.urlPlaceholder) }
        func body(_ value: RecordedBody?) -> RecordedBody? {
            guard case .bytes(let data)? = value, let string = String(data: data, encoding: .utf8) else { return value }
            let scrubbed = text(string)
            return scrubbed == string ? value : .bytes(Data(scrubbed.utf8))
        }
        switch payload {
        case .queued(let method, let value, let headers, let maxAttempts, let requestBody, let options):
            // A value from another operation's answer, in this request (a templated token).
            return .queued(method: method, url: url(value), headers: headers.mapValues(text), maxAttempts: maxAttempts,
                           body: body(requestBody), options: options)
        case .built(let method, let value, let headers, let requestBody):
            return .built(method: method, url: url(value), headers: headers.mapValues(text), body: body(requestBody))
        case .response(let status, let headers, let expected, let version):
            return .response(status: status, headers: headers.mapValues(text), expectedBytes: expected, httpVersion: version)
        case .redirect(let status, let location, let dropped, let refused):
            return .redirect(status: status, location: url(location), dropped: dropped, refused: refused.map(text))
        case .taskCreated(let task, let value, let insecure):
            return .taskCreated(taskIdentifier: task, url: url(value), insecure: insecure)
        case .taskCompleted(let error?):
            return .taskCompleted(error: TransportError(code: error.code, message: text(error.message), tls: error.tls, timeout: error.timeout,
                                                         cancelledByHedge: error.cancelledByHedge))
        case .responseBody(.bytes(let data), let total, let truncated, let type):
            // A server that echoes the request (an echo route, an error page quoting the
            // Authorization header) sends its secrets back in the body.
            guard let body = String(data: data, encoding: .utf8) else { return payload }
            let scrubbed = text(body)
            return scrubbed == body ? payload : .responseBody(body: .bytes(Data(scrubbed.utf8)), totalBytes: total, truncated: truncated, mediaType: type)
        case .requestBody(let requestBody, let total, let truncated, let type):
            return .requestBody(body: body(requestBody) ?? requestBody, totalBytes: total, truncated: truncated, mediaType: type)
        case .headerFields(let side, let fields):
            guard !secrets.isEmpty else { return payload }
            return .headerFields(side: side, fields: HTTPFields(fields.map { HTTPField(name: $0.name, value: text($0.value)) }))
        case .trailers(let side, let fields):
            guard !secrets.isEmpty else { return payload }
            return .trailers(side: side, fields: HTTPFields(fields.map { HTTPField(name: $0.name, value: text($0.value)) }))
        case .validationFailed(let reason):
            return .validationFailed(reason: text(reason))
        case .retryScheduled(let delay, let reason):
            return .retryScheduled(delay: delay, reason: text(reason))
        case .retryDenied(let reason):
            return .retryDenied(reason: text(reason))
        case .preparationFailed(let reason):
            return .preparationFailed(reason: text(reason))
        case .finished(let outcome, let status, let attempts, let duration, let reason):
            return .finished(outcome: outcome, status: status, attempts: attempts, duration: duration, reason: reason.map(text))
        default:
            return payload
        }
    }

    private static let unreserved: CharacterSet = {
        var set = CharacterSet.alphanumerics
        set.insert(charactersIn: "-._~")
        return set
    }()

    /// `text` with every occurrence of each secret (as written, and percent-encoded) replaced.
    static func scrub(_ text: String, of secrets: [String], with placeholder: String) -> String {
        var out = text
        for secret in secrets {
            out = out.replacingOccurrences(of: secret, with: placeholder)
            if let encoded = secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics), encoded != secret {
                out = out.replacingOccurrences(of: encoded, with: placeholder)
            }
            if let encoded = secret.addingPercentEncoding(withAllowedCharacters: unreserved), encoded != secret {
                out = out.replacingOccurrences(of: encoded, with: placeholder)
            }
        }
        return out
    }
}

extension Redactor {
    /// The values ``redact(url:oauthCode:)`` takes out of `text`: the userinfo's password
    /// (and whole userinfo) and secret query and fragment values, as written and decoded.
    public func secretValues(url text: String) -> [String] {
        guard Self.mayHoldSecrets(url: text) else { return [] }
        var found: [String] = []
        var rest = Substring(text)
        if let scheme = Self.schemeSeparator(in: rest) {
            let authority = rest[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            if let at = authority.lastIndex(of: "@") {
                let userinfo = authority[..<at]
                found.append(String(userinfo))
                if let colon = userinfo.firstIndex(of: ":") { found.append(String(userinfo[userinfo.index(after: colon)...])) }
            }
            rest = rest[authority.endIndex...]
        }
        guard let start = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) else { return found }
        for piece in rest[rest.index(after: start)...].split(whereSeparator: { $0 == "&" || $0 == ";" || $0 == "#" || $0 == "?" }) {
            guard let equals = piece.firstIndex(of: "="), isSecretParameter(String(piece[..<equals]), oauthCode: false) else { continue }
            let value = String(piece[piece.index(after: equals)...])
            found.append(value)
            if let decoded = value.removingPercentEncoding, decoded != value { found.append(decoded) }
        }
        return found
    }
}
