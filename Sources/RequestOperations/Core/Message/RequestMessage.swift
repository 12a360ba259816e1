import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A request as the engine carries it: its method, its URL, its header fields in the order
/// they were written — each repeat a field of its own, names spelled as written
/// (swift-http-types' `HTTPFields`) — and its body.
///
/// Operations, transports and events all work on it; `URLRequest` (one value per name, in no
/// order, re-spelled) is an adapter at the library's edge: ``init(_:)`` and ``urlRequest``.
/// A proxy's client's request arrives as one and leaves as it came.
///
/// ```swift
/// var message = RequestMessage(method: "POST", url: URL(string: "https://api.example.com/orders")!)
/// message.headerFields.append(HTTPField(name: .contentType, value: "application/json"))
/// message.body = .data(Data(#"{"sku": 42}"#.utf8))
/// queue.add(message)
/// ```
public struct RequestMessage: Sendable {
    /// The message's parts, kept together so a copy of the message is one reference: a
    /// request is handed through a dozen hands (the operation, its attempt, the transport,
    /// the events) and changed by few (interceptors, cookies), so a change makes a new box
    /// and a copy costs one retain, not six (#58).
    private struct Parts: Sendable {
        var method: String
        var url: URL
        var headerFields: HTTPFields
        var body: RequestBody
        var timeoutInterval: TimeInterval
        var unsendableHeader: String?
        var allowsHTTP2 = true
    }

    /// Immutable, so sharing it between copies and threads is safe.
    private final class Box: Sendable {
        let parts: Parts

        init(_ parts: Parts) {
            self.parts = parts
        }
    }

    private var box: Box

    /// Changing any part makes a new box; the old one stays with other copies.
    private var parts: Parts {
        get { box.parts }
        set { box = Box(newValue) }
    }

    /// The method as written (`GET`, `PROPFIND`); checked to be a token before it is sent.
    public var method: String {
        get { box.parts.method }
        set { parts.method = newValue }
    }
    public var url: URL {
        get { box.parts.url }
        set { parts.url = newValue }
    }
    /// The header fields in their order. A `Host` field given is sent as given, where it stands
    /// (a proxied request's as its client spelt it); without one the transport writes the
    /// URL's. A redirect to another origin drops it (``RedirectPolicy``).
    public var headerFields: HTTPFields {
        get { box.parts.headerFields }
        set { parts.headerFields = newValue }
    }
    public var body: RequestBody {
        get { box.parts.body }
        set { parts.body = newValue }
    }
    /// How long URLSession's transport lets the connection idle (the one transport that reads
    /// it; the engine sets it past the operation's own limits).
    public var timeoutInterval: TimeInterval {
        get { box.parts.timeoutInterval }
        set { parts.timeoutInterval = newValue }
    }
    /// Whether the transport may speak HTTP/2 for this request where the server offers it (by
    /// ALPN): true by default. False keeps it to HTTP/1.1 — what `reqtop proxy` asks for a
    /// client that spoke HTTP/1.1, so the server hears the version the client chose, as it
    /// would with no proxy between them (mitmproxy mirrors its client's ALPN the same way). Read
    /// by the NIO transport; URLSession's chooses for itself.
    public var allowsHTTP2: Bool {
        get { box.parts.allowsHTTP2 }
        set { parts.allowsHTTP2 = newValue }
    }
    /// Why a header of the `URLRequest` this was made from cannot be a field (a name that is
    /// not a token, a value holding CR, LF or NUL): ``HTTPFieldCheck`` refuses to send the
    /// message with these words, rather than let the header vanish or go out changed.
    var unsendableHeader: String? {
        get { box.parts.unsendableHeader }
        set { parts.unsendableHeader = newValue }
    }

    public init(method: String = "GET", url: URL, headerFields: HTTPFields = [:], body: RequestBody = .none,
                timeoutInterval: TimeInterval = 60, allowsHTTP2: Bool = true) {
        box = Box(Parts(method: method, url: url, headerFields: headerFields, body: body, timeoutInterval: timeoutInterval,
                        allowsHTTP2: allowsHTTP2))
    }

    /// `request`'s method, URL, headers (in the dictionary's order: a `URLRequest` keeps none)
    /// and body. A request without a URL gets `about:blank`, which no transport sends.
    public init(_ request: URLRequest) {
        let headers = request.allHTTPHeaderFields ?? [:]
        box = Box(Parts(method: request.httpMethod ?? "GET", url: request.url ?? URL(string: "about:blank")!,
                        headerFields: Self.fields(headers), body: Self.body(of: request), timeoutInterval: request.timeoutInterval,
                        unsendableHeader: HTTPFieldCheck.problem(in: headers)))
    }

    /// The message as a `URLRequest`: one value per name (repeats joined), a stream body as
    /// its `httpBodyStream` (taken: it is read once).
    public var urlRequest: URLRequest {
        var request = foundationHead
        switch body {
        case .none: break
        case .data(let data): request.httpBody = data
        case .stream(let stream): request.httpBodyStream = stream.take()
        }
        return request
    }

    /// The message as a `URLRequest` to show code at the library's edge (an interceptor, a
    /// redirect policy, a preparer): a stream body is left out (it is read once, by the
    /// transport); ``updated(by:)`` keeps it unless the code set a body of its own.
    public var foundationHead: URLRequest {
        var request = URLRequest(url: url, timeoutInterval: timeoutInterval)
        request.httpMethod = method
        for (name, value) in joinedByName { request.setValue(value, forHTTPHeaderField: name) }
        if case .data(let data) = body { request.httpBody = data }
        return request
    }

    /// This message as `edited` (a `URLRequest` that code at the edge made of ``foundationHead``)
    /// says it now is, its fields kept in their order and spelling (``FieldMerge``): an
    /// unchanged field stays where it was, each repeat apart; a changed one goes once,
    /// changed, where it first stood; a removed one goes; an added one comes after the rest.
    public func updated(by edited: URLRequest) -> RequestMessage {
        var message = self
        message.method = edited.httpMethod ?? "GET"
        if let url = edited.url { message.url = url }
        message.timeoutInterval = edited.timeoutInterval
        var headers = edited.allHTTPHeaderFields ?? [:]
        Self.hostFollowingTheURL(from: headerFields[.hostField], url: url, in: &headers, to: message.url)
        message.headerFields = FieldMerge.merged(headerFields, with: headers.lazy.map { ($0.key, $0.value) })
        message.unsendableHeader = HTTPFieldCheck.problem(in: headers)
        if let stream = edited.httpBodyStream {
            message.body = .stream(BodyStream(stream))
        } else if let data = edited.httpBody {
            message.body = .data(data)
        } else if case .data = body {
            message.body = .none
        }
        return message
    }

    /// A `Host` that named the URL goes on naming it, where it stood: left out of an edit (a
    /// copy leaves it to the URL) or left as it was while the URL changed. One the code changed
    /// itself, or one that named another host, is the code's.
    private static func hostFollowingTheURL(from host: String?, url: URL, in headers: inout [String: String], to next: URL) {
        guard let host, HostAddress.names(host, url: url) else { return }
        let key = headers.keys.first { $0.lowercased() == "host" }
        guard key.map({ headers[$0] == host }) ?? true else { return }
        headers[key ?? "Host"] = HostAddress.names(host, url: next) ? host : HostAddress.hostField(for: next)
    }

    // MARK: - Fields by name

    /// The value of `name` (any spelling), repeats joined as one (``FieldMerge/joined(_:canonicalName:)``); nil when absent.
    public func value(forField name: String) -> String? {
        guard let name = HTTPField.Name(name) else { return nil }
        let values = headerFields[values: name]
        return values.isEmpty ? nil : FieldMerge.joined(values, canonicalName: name.canonicalName)
    }

    /// Sets `name` to one field of `value` where its first field stood (appended when it had
    /// none), or removes every field of it for nil. A name that is not a token is ignored.
    public mutating func setValue(_ value: String?, forField name: String) {
        guard let name = HTTPField.Name(name) else { return }
        guard let value else {
            headerFields[name] = nil
            return
        }
        guard let first = headerFields.firstIndex(where: { $0.name == name }) else {
            headerFields.append(HTTPField(name: name, value: value))
            return
        }
        var fields = HTTPFields()
        for (index, field) in headerFields.enumerated() where field.name != name || index == first {
            fields.append(index == first ? HTTPField(name: field.name, value: value) : field)
        }
        headerFields = fields
    }

    /// One value per name, spelled as first written, in the order names first appear.
    public var joinedByName: [(name: String, value: String)] {
        FieldMerge.joinedByName(headerFields)
    }

    /// ``joinedByName`` as a dictionary (the `queued` event's `headers`).
    public var headerDictionary: [String: String] {
        // Made in one pass: every request's `queued` event reads it.
        var headers: [String: String] = [:]
        var spelled: [String: String] = [:]
        headers.reserveCapacity(headerFields.count)
        for field in headerFields {
            let key = field.name.canonicalName
            if let name = spelled[key] {
                headers[name] = FieldMerge.joined([headers[name]!, field.value], canonicalName: key)
            } else {
                spelled[key] = field.name.rawName
                headers[field.name.rawName] = field.value
            }
        }
        return headers
    }

    // MARK: - From a URLRequest

    static func fields(_ headers: [String: String]) -> HTTPFields {
        var fields = HTTPFields()
        fields.reserveCapacity(headers.count)
        for (name, value) in headers {
            // A name that is not a token cannot be a field: ``unsendableHeader`` names it.
            guard let fieldName = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        return fields
    }

    static func body(of request: URLRequest) -> RequestBody {
        if let data = request.httpBody { return .data(data) }
        if let stream = request.httpBodyStream { return .stream(BodyStream(stream)) }
        return .none
    }
}

extension HTTPField.Name {
    /// `Host`: swift-http-types marks its own `.host` unavailable (HTTP/2's `:authority` carries
    /// it there), and a request given to an HTTP/1 transport may carry one of its own.
    static let hostField = HTTPField.Name("Host")!
}
