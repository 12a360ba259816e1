import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations

/// A request as one entry of a plan's `requests`: what `e` in the monitor opens in the
/// person's editor and `reqtop export REC --plan ID` prints, and what comes back from the
/// editor to be sent again. Written in the plan's own fields (`id`, `method`, `url`,
/// `headers`, `body`, `timeout`, `deadline`), so `reqtop run` takes it as it is.
///
/// A JSON body is written as JSON (so it is edited as JSON); any other text body as a
/// string; a binary body cannot be edited and is refused by name.
public struct RequestEntry: Sendable, Equatable {
    public var id: String
    public var method: String
    public var url: String
    public var headers: [String: String]
    public var body: Data?
    public var timeout: TimeInterval?
    public var deadline: TimeInterval?

    public init(id: String, method: String, url: String, headers: [String: String], body: Data?,
                timeout: TimeInterval? = nil, deadline: TimeInterval? = nil) {
        (self.id, self.method, self.url, self.headers, self.body, self.timeout, self.deadline) = (id, method, url, headers, body, timeout, deadline)
    }

    static let keys: Set<String> = ["id", "method", "url", "headers", "body", "timeout", "deadline"]

    /// The entry as pretty-printed JSON, members in the plan's order.
    public var json: String {
        var members: [String] = ["  \"id\": \(JSONText.quote(id))", "  \"method\": \(JSONText.quote(method))", "  \"url\": \(JSONText.quote(url))"]
        if !headers.isEmpty {
            let lines = headers.sorted { $0.key.lowercased() < $1.key.lowercased() }.map { "    \(JSONText.quote($0.key)): \(JSONText.quote($0.value))" }
            members.append("  \"headers\": {\n" + lines.joined(separator: ",\n") + "\n  }")
        }
        if let body, !body.isEmpty {
            if let object = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]), !(object is String),
               let pretty = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .fragmentsAllowed]) {
                members.append("  \"body\": " + String(decoding: pretty, as: UTF8.self).replacingOccurrences(of: "\n", with: "\n  "))
            } else {
                members.append("  \"body\": \(JSONText.quote(String(decoding: body, as: UTF8.self)))")
            }
        }
        if let timeout { members.append("  \"timeout\": \(JSONText.number(timeout))") }
        if let deadline { members.append("  \"deadline\": \(JSONText.number(deadline))") }
        return "{\n" + members.joined(separator: ",\n") + "\n}\n"
    }

    /// Reads an entry back; errors name the line and column of broken JSON, or the field.
    public static func parse(_ text: String, file: String) throws -> RequestEntry {
        let data = Data(text.utf8)
        if let problem = JSONProblemFinder.find(in: data) {
            throw StrictJSONError(file: file, path: "", message: "not valid JSON: \(problem)")
        }
        guard let object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? [String: Any] else {
            throw StrictJSONError(file: file, path: "", message: "expected one request as a JSON object with \"method\" and \"url\"")
        }
        let reader = StrictJSONReader(file: file)
        try reader.checkKeys(object, allowed: keys, at: "")
        guard let url = try reader.string(object["url"], at: "url"), let parsed = URL(string: url),
              let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme), parsed.host?.isEmpty == false else {
            throw StrictJSONError(file: file, path: "url", message: "expected an http:// or https:// URL with a host")
        }
        let method = (try reader.string(object["method"], at: "method") ?? "GET").uppercased()
        guard method.allSatisfy({ $0.isLetter }), !method.isEmpty else {
            throw StrictJSONError(file: file, path: "method", message: "\"\(method)\" is not an HTTP method")
        }
        let headers = try reader.headers(object["headers"], at: "headers")
        var body: Data?
        switch object["body"] {
        case nil, is NSNull: break
        case let text as String: body = Data(text.utf8)
        case let value?: body = try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .withoutEscapingSlashes])
        }
        return RequestEntry(id: try reader.string(object["id"], at: "id") ?? "edited", method: method, url: url, headers: headers, body: body,
                            timeout: try reader.timeLimit(object["timeout"], at: "timeout"),
                            deadline: try reader.timeLimit(object["deadline"], at: "deadline"))
    }

    /// The request to send.
    public var urlRequest: URLRequest {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        return request
    }
}

extension RequestEntry {
    /// The entry as the edited request a `QueueCommand/resend(operation:edited:)` sends.
    public var edited: EditedRequest {
        EditedRequest(request: urlRequest, attemptTimeout: timeout, deadline: deadline)
    }

    /// An edited request as a plan entry again: how an attached monitor's `resend` carries
    /// it over the endpoint.
    public init(edited: EditedRequest, id: String = "edited") {
        let request = edited.request
        self.init(id: id, method: request.httpMethod ?? "GET", url: request.url?.absoluteString ?? "",
                  headers: request.allHTTPHeaderFields ?? [:], body: request.httpBody,
                  timeout: edited.attemptTimeout, deadline: edited.deadline)
    }
}
