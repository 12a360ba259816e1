import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestArchive
import RequestEventFormat
import RequestOperations

/// The requests of a recording, ready to send again: each operation's request as it was
/// sent (a dependent operation's `built` request, else its `queued` one), with its body and
/// its recorded time limits and retry settings, and scheme, host and port rewritten to a
/// target when one is given.
///
/// A request whose head the recording holds as it was written (a proxy's client's: the
/// `headerFields` event) is sent so: its fields in order, repeats apart, names as spelled.
///
/// A request that carries a redacted value (a `[redacted]` header, query value, URL
/// user:password or body field) or a body the recording left out is never sent in part: it
/// is set aside with the reason.
package struct Resend {
    package struct Skipped: Equatable {
        package var id: String
        package var reason: String
    }

    package struct Request {
        package var id: String
        package var request: RequestMessage
        package var options: RequestOptions
    }

    package var requests: [Request] = []
    package var skipped: [Skipped] = []
    /// Things sent otherwise than recorded (a custom retry policy replaced by the default).
    package var notes: [String] = []
    /// The hosts the requests go to, for the confirmation.
    package var hosts: [String] = []
    /// The requests sent with a redacted value's placeholder in it (only with
    /// `sendingPlaceholders`), by id.
    package var withPlaceholders: [String] = []

    /// What a recording says of one operation's request.
    private struct Recorded {
        var method: String
        var url: String
        var headers: [String: String]
        var body: RecordedBody?
        var options: RecordedOptions?
        /// The head as it was written (`headerFields`, side `request`), when recorded.
        var fields: HTTPFields?
    }

    /// `sendingPlaceholders`: a request with a redacted value is sent with the placeholder in
    /// its place rather than set aside. Only for servers of our own that answer as recorded
    /// (`reqtop whatif`): never toward a real upstream.
    package init(events: [RequestEvent], target: URL?, sendingPlaceholders: Bool = false) {
        var order: [String] = []
        var recorded: [String: Recorded] = [:]
        for event in events {
            switch event.payload {
            case .queued(let method, let url, let headers, _, let body, let options):
                guard recorded[event.operationID] == nil else { continue }
                order.append(event.operationID)
                recorded[event.operationID] = Recorded(method: method, url: url, headers: headers, body: body, options: options)
            case .built(let method, let url, let headers, let body):
                guard var request = recorded[event.operationID] else { continue }
                (request.method, request.url, request.headers, request.body) = (method, url, headers, body)
                // The request was made anew from its parents' answers: the head of `queued` is gone.
                request.fields = nil
                recorded[event.operationID] = request
            case .headerFields(.request, let fields):
                guard recorded[event.operationID] != nil, recorded[event.operationID]?.fields == nil else { continue }
                recorded[event.operationID]?.fields = fields
            case .requestBody(.bytes(let data), let total, false, _):
                // A streamed body kept whole as it went (a proxy's client's upload, a gRPC
                // call's messages): `queued` could only say "a stream"; this is what was sent.
                guard case .omitted? = recorded[event.operationID]?.body, data.count == total else { continue }
                recorded[event.operationID]?.body = .bytes(data)
            default:
                continue
            }
        }
        for id in order {
            do {
                let request = try Self.request(recorded[id]!, target: target, redactedAllowed: sendingPlaceholders)
                if sendingPlaceholders, Self.carriesPlaceholder(recorded[id]!) { withPlaceholders.append(id) }
                requests.append(Request(id: id, request: request, options: options(recorded[id]!.options, id: id)))
                let host = [request.url.host ?? "", request.url.port.map { ":\($0)" } ?? ""].joined()
                if !hosts.contains(host) { hosts.append(host) }
            } catch let reason as NotSent {
                skipped.append(Skipped(id: id, reason: reason.text))
            } catch {
                skipped.append(Skipped(id: id, reason: "\(error)"))
            }
        }
    }

    private struct NotSent: Error {
        var text: String
        init(_ text: String) { self.text = text }
    }

    private static func carriesPlaceholder(_ recorded: Recorded) -> Bool {
        if recorded.headers.values.contains(where: { $0.contains(Redactor.placeholder) }) || recorded.url.contains(Redactor.urlPlaceholder)
            || recorded.url.contains(Redactor.placeholder.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? Redactor.placeholder) {
            return true
        }
        if case .bytes(let data)? = recorded.body { return !Redactor.redactedFields(body: data, headers: recorded.headers).isEmpty }
        return false
    }

    /// Whether a recorded request is a proxy's tunnel row (`CONNECT`, or an upgrade): its bytes
    /// were relayed as they came, and nothing can send them again.
    package static func isTunnel(method: String, headers: [String: String]) -> Bool {
        method == "CONNECT" || headers.keys.contains { $0.lowercased() == "upgrade" }
    }

    /// The ids of the rows among `events` that no server answered as a request: a proxy's
    /// tunnels (bytes relayed) and the requests it refused itself (``RecordedOptions/refusedByProxy``).
    package static func rowsNotSent(in events: [RequestEvent]) -> Set<String> {
        Set(events.compactMap { event in
            guard case .queued(let method, _, let headers, _, _, let options) = event.payload,
                  isTunnel(method: method, headers: headers) || options?.refusedByProxy == true else { return nil }
            return event.operationID
        })
    }

    private static func request(_ recorded: Recorded, target: URL?, redactedAllowed: Bool) throws -> RequestMessage {
        // A proxy's tunnel row: bytes relayed, not a request anything can send again.
        if isTunnel(method: recorded.method, headers: recorded.headers) {
            throw NotSent("a tunnel (\(recorded.method == "CONNECT" ? "CONNECT" : "an upgrade")): its bytes were relayed as they came, and cannot be sent again")
        }
        // What the proxy answered itself: the client's request never reached a server.
        if recorded.options?.refusedByProxy == true {
            throw NotSent("the proxy refused it and answered itself; it was never sent")
        }
        let redactedHeaders = recorded.headers.filter { $0.value == Redactor.placeholder }.map(\.key).sorted()
        guard redactedAllowed || redactedHeaders.isEmpty else { throw NotSent("its \(redactedHeaders.joined(separator: ", ")) value was redacted") }
        guard var components = URLComponents(string: recorded.url), components.host != nil else {
            throw NotSent("\"\(recorded.url)\" is not a URL it can send to")
        }
        if !redactedAllowed, let redactedQuery = components.queryItems?.filter({ $0.value == Redactor.placeholder }).map(\.name), !redactedQuery.isEmpty {
            throw NotSent("its query value \(redactedQuery.joined(separator: ", ")) was redacted")
        }
        if !redactedAllowed, components.percentEncodedUser == Redactor.urlPlaceholder || (components.percentEncodedFragment ?? "").contains(Redactor.urlPlaceholder) {
            throw NotSent("its \(components.percentEncodedUser == Redactor.urlPlaceholder ? "user:password" : "fragment") was redacted")
        }
        if let target { retarget(&components, to: target) }
        guard let url = components.url else { throw NotSent("the rewritten URL is not valid") }
        if let problem = recorded.headers.lazy.compactMap({ HTTPFieldCheck.problem(name: $0.key, value: $0.value) }).first {
            throw NotSent("not re-sent: \(problem)")
        }
        var request = URLRequest(url: url)
        request.httpMethod = recorded.method
        for (name, value) in recorded.headers { request.setValue(value, forHTTPHeaderField: name) }
        switch recorded.body {
        case .bytes(let data)?:
            let redacted = Redactor.redactedFields(body: data, headers: recorded.headers)
            guard redactedAllowed || redacted.isEmpty else {
                throw NotSent("its body field\(redacted.count == 1 ? "" : "s") \(redacted.joined(separator: ", ")) \(redacted.count == 1 ? "was" : "were") redacted")
            }
            request.httpBody = data
        case .omitted(let bytes, let reason)?:
            throw NotSent("its body\(bytes.map { " (\($0) bytes)" } ?? "") was not recorded: \(reason)")
        case nil:
            break
        }
        var message = RequestMessage(request)
        // The same headers as `queued`'s, as they were written; the redactions were checked on those.
        if let fields = recorded.fields { message.headerFields = fields }
        return message
    }

    /// Scheme, host and port from the target; a path in the target goes in front of the
    /// recorded path (--target http://127.0.0.1:8080/staging sends /echo to /staging/echo).
    private static func retarget(_ components: inout URLComponents, to target: URL) {
        components.scheme = target.scheme
        components.host = target.host
        components.port = target.port
        let prefix = URLComponents(url: target, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
        if !prefix.isEmpty, prefix != "/" {
            let base = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
            let path = components.percentEncodedPath
            components.percentEncodedPath = base + (path.hasPrefix("/") ? path : "/" + path)
        }
    }

    /// The recorded time limits and retry settings; what was not recorded is the default,
    /// said in a note when it differs from what the recording ran with.
    private mutating func options(_ recorded: RecordedOptions?, id: String) -> RequestOptions {
        guard let recorded else { return RequestOptions() }
        let options = recorded.applied(to: RequestOptions())
        if recorded.retry == nil {
            notes.append("\(id): its retry policy was not one a recording can hold; re-sent with the default (3 attempts, 0.5 s doubling)")
        }
        return options
    }
}
