import Foundation
import RequestOperations

/// Takes secrets out of events before they are written: the values of credential headers
/// and of query parameters that carry tokens or passwords. What was there is replaced by
/// ``placeholder``, so a reader sees that a value existed, never what it was.
public struct Redactor: Sendable {
    public static let placeholder = "[redacted]"
    public var headers: Set<String>
    public var queryParameters: Set<String>

    public init(headers: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"],
                queryParameters: Set<String> = ["token", "access_token", "refresh_token", "id_token", "api_key", "apikey",
                                                "password", "passwd", "secret", "client_secret", "signature", "sig"]) {
        self.headers = headers
        self.queryParameters = queryParameters
    }

    public func redact(_ event: RequestEvent) -> RequestEvent {
        var event = event
        switch event.payload {
        case .queued(let method, let url, let headerFields, let maxAttempts):
            event.payload = .queued(method: method, url: redact(url: url), headers: redact(headers: headerFields), maxAttempts: maxAttempts)
        case .taskCreated(let task, let url):
            event.payload = .taskCreated(taskIdentifier: task, url: redact(url: url))
        case .redirect(let status, let location):
            event.payload = .redirect(status: status, location: redact(url: location))
        case .response(let status, let headerFields, let expected):
            event.payload = .response(status: status, headers: redact(headers: headerFields), expectedBytes: expected)
        default:
            break
        }
        return event
    }

    public func redact(headers fields: [String: String]) -> [String: String] {
        var out = fields
        for key in fields.keys where headers.contains(key.lowercased()) {
            out[key] = Self.placeholder
        }
        return out
    }

    /// The URL with secret query values replaced; anything that is not a URL is kept.
    public func redact(url text: String) -> String {
        guard var components = URLComponents(string: text), let items = components.queryItems, !items.isEmpty else { return text }
        var changed = false
        components.queryItems = items.map { item in
            guard queryParameters.contains(item.name.lowercased()), item.value != nil else { return item }
            changed = true
            return URLQueryItem(name: item.name, value: Self.placeholder)
        }
        return changed ? (components.string ?? text) : text
    }
}
