import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestArchive
import RequestEventFormat
import RequestOperations

/// The requests of a recording, ready to send again: each operation's first request, with
/// scheme, host and port rewritten to a target when one is given.
///
/// Recordings keep methods, URLs and headers, not bodies, so a re-sent request has no body.
/// A request that carries a redacted value (a `[redacted]` header or query value) is never
/// sent with the placeholder: it is set aside with the reason.
struct Resend {
    struct Skipped: Equatable {
        var id: String
        var reason: String
    }

    var requests: [(id: String, request: URLRequest)] = []
    var skipped: [Skipped] = []
    /// The hosts the requests go to, for the confirmation.
    var hosts: [String] = []

    init(events: [RequestEvent], target: URL?) {
        var seen = Set<String>()
        for event in events {
            guard case .queued(let method, let url, let headers, _) = event.payload, seen.insert(event.operationID).inserted else { continue }
            let redactedHeaders = headers.filter { $0.value == Redactor.placeholder }.map(\.key).sorted()
            if !redactedHeaders.isEmpty {
                skipped.append(Skipped(id: event.operationID, reason: "its \(redactedHeaders.joined(separator: ", ")) value was redacted"))
                continue
            }
            guard var components = URLComponents(string: url), components.host != nil else {
                skipped.append(Skipped(id: event.operationID, reason: "\"\(url)\" is not a URL it can send to"))
                continue
            }
            if let redactedQuery = components.queryItems?.filter({ $0.value == Redactor.placeholder }).map(\.name), !redactedQuery.isEmpty {
                skipped.append(Skipped(id: event.operationID, reason: "its query value \(redactedQuery.joined(separator: ", ")) was redacted"))
                continue
            }
            if components.percentEncodedUser == Redactor.urlPlaceholder || (components.percentEncodedFragment ?? "").contains(Redactor.urlPlaceholder) {
                skipped.append(Skipped(id: event.operationID, reason: "its \(components.percentEncodedUser == Redactor.urlPlaceholder ? "user:password" : "fragment") was redacted"))
                continue
            }
            if let target {
                components.scheme = target.scheme
                components.host = target.host
                components.port = target.port
                // A path in the target goes in front of the recorded path
                // (--target http://127.0.0.1:8080/staging sends /echo to /staging/echo).
                let prefix = URLComponents(url: target, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
                if !prefix.isEmpty, prefix != "/" {
                    let base = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
                    let path = components.percentEncodedPath
                    components.percentEncodedPath = base + (path.hasPrefix("/") ? path : "/" + path)
                }
            }
            guard let rewritten = components.url else {
                skipped.append(Skipped(id: event.operationID, reason: "the rewritten URL is not valid"))
                continue
            }
            if let problem = headers.lazy.compactMap({ HTTPFieldCheck.problem(name: $0.key, value: $0.value) }).first {
                skipped.append(Skipped(id: event.operationID, reason: "not re-sent: \(problem)"))
                continue
            }
            var request = URLRequest(url: rewritten)
            request.httpMethod = method
            for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
            requests.append((event.operationID, request))
            let host = [rewritten.host ?? "", rewritten.port.map { ":\($0)" } ?? ""].joined()
            if !hosts.contains(host) { hosts.append(host) }
        }
    }
}
