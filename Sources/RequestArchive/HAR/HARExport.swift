import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations
import RequestEventFormat

/// Writes a session as HAR 1.2: one entry per attempt, with every field the spec requires,
/// timings as it defines them, and reqtop's own data in `_reqtop` (operation id, attempt,
/// the retry delay and reason, and the attempt's events, so that an import gives back the
/// very same events).
public enum HARExport {
    /// `shapes`: for operations imported from another tool's HAR, what its entries said that
    /// events cannot hold (header order, cookies), given back as it was.
    public static func document(events: [RequestEvent], startedAt: Date, creatorVersion: String = "0.1.0",
                                shapes: [String: HAREntryShape] = [:]) -> [String: Any] {
        ["log": [
            "version": "1.2",
            "creator": ["name": "reqtop", "version": creatorVersion],
            "pages": [] as [Any],
            "entries": entries(events: events, startedAt: startedAt, shapes: shapes),
        ] as [String: Any]]
    }

    /// The entries for `events`, one per attempt, oldest first (as HAR prefers); the
    /// recorder writes them as operations finish.
    static func entries(events: [RequestEvent], startedAt: Date, shapes: [String: HAREntryShape] = [:]) -> [[String: Any]] {
        var order: [String] = []
        var byOperation: [String: [RequestEvent]] = [:]
        var hostEvents: [RequestEvent] = []
        for event in events.sorted(by: { $0.time < $1.time }) {
            // Host-level events (`op` empty) belong to no entry; they ride in the `_reqtop`
            // events of the entry that started last before them (import reads them back whole).
            if event.operationID.isEmpty {
                hostEvents.append(event)
                continue
            }
            if byOperation[event.operationID] == nil { order.append(event.operationID) }
            byOperation[event.operationID, default: []].append(event)
        }
        var entries: [(start: TimeInterval, entry: [String: Any])] = []
        for id in order {
            let own = byOperation[id]!
            // The request as sent: a dependent operation's `built` replaces its `queued`.
            var request = SentRequest()
            for event in own {
                switch event.payload {
                case .queued(let method, let url, let headers, _, let body, let options):
                    request = SentRequest(method: method, url: url, headers: headers, body: body, fields: request.fields,
                                          httpVersion: options?.clientHTTPVersion ?? request.httpVersion)
                case .built(let method, let url, let headers, let body):
                    request = SentRequest(method: method, url: url, headers: headers, body: body, fields: request.fields, httpVersion: request.httpVersion)
                case .headerFields(.request, let fields):
                    request.fields = fields
                case .requestBody(let body, _, _, _):
                    // A streamed upload as it went: `queued` could only name it.
                    request.body = body
                case .trailers(.request, let fields):
                    request.trailers = fields
                case .headerFields(.response, _), .trailers(.response, _):
                    break
                case .started, .sent, .connection, .preparationFailed, .taskCreated, .redirect, .response, .data, .uploaded, .messages,
                     .responseBody, .taskCompleted, .validationFailed, .retryScheduled, .retryDenied, .hedged, .injected,
                     .breakpoint, .breakpointResolved, .breakpointSet, .breakpointRemoved, .circuitWaiting, .circuitOpened,
                     .circuitHalfOpen, .circuitClosed, .rateLimitWaiting, .rateLimited, .retryBudget, .earlyRetry, .intercepted,
                     .held, .released, .reactorStarted, .reactorWaiting, .reactorFinished, .requeued, .cancelled, .finished,
                     .missed, .other: break
                }
            }
            let attempts = Set(own.map(\.attempt)).sorted()
            for attempt in attempts {
                // The queued event (attempt 1) and everything of this attempt; a retry decision
                // is published with the attempt it follows.
                let mine = own.filter { $0.attempt == attempt }
                guard let started = mine.first(where: { $0.payload.kind == .started }) ?? mine.first else { continue }
                entries.append((started.time, entry(id: id, attempt: attempt, events: mine, started: started.time, startedAt: startedAt,
                                                    request: request, shape: shapes[id])))
            }
        }
        var sorted = entries.enumerated().sorted { ($0.element.start, $0.offset) < ($1.element.start, $1.offset) }.map(\.element)
        // Both are in time order: one walk (a retry budget event follows every retry, so a
        // search per event would be quadratic in a long session).
        var index = 0
        for event in hostEvents where !sorted.isEmpty {
            while index + 1 < sorted.count, sorted[index + 1].start <= event.time { index += 1 }
            var reqtop = sorted[index].entry["_reqtop"] as? [String: Any] ?? [:]
            reqtop["events"] = (reqtop["events"] as? [Any] ?? []) + [eventObject(event)]
            sorted[index].entry["_reqtop"] = reqtop
        }
        return sorted.map(\.entry)
    }

    public static func data(events: [RequestEvent], startedAt: Date, shapes: [String: HAREntryShape] = [:]) throws -> Data {
        try JSONSerialization.data(withJSONObject: document(events: events, startedAt: startedAt, shapes: shapes), options: [.prettyPrinted, .sortedKeys])
    }

    private struct SentRequest {
        var method = "GET", url = "", headers: [String: String] = [:], body: RecordedBody?
        /// The fields as the client sent them (a proxy's request): HAR's headers in their order.
        var fields: HTTPFields?
        /// Fields after the body (a client's, relayed): HAR's `_trailers` (HAR has none of its own).
        var trailers: HTTPFields?
        /// The version the request came in over (a proxy's client's), else HTTP/1.1.
        var httpVersion = "HTTP/1.1"

        /// HAR's `postData` (`mimeType`, `text`), base64 with `"encoding": "base64"` for a
        /// binary body as `content` does it; the size or -1.
        var postData: (fields: [String: Any]?, size: Int) {
            switch body {
            case .bytes(let data)?:
                let type = headers.value(forHTTPHeader: "Content-Type") ?? ""
                if let text = String(data: data, encoding: .utf8) { return (["mimeType": type, "text": text], data.count) }
                return (["mimeType": type, "text": data.base64EncodedString(), "encoding": "base64"], data.count)
            case .omitted(let bytes, _)?: return (nil, bytes ?? -1)
            case nil: return (nil, 0)
            }
        }
    }

    /// A head's fields as HAR's `headers`: in their order, each repeat an entry, names as sent.
    private static func pairs(_ fields: HTTPFields) -> [[String: String]] {
        fields.map { ["name": $0.name.rawName, "value": $0.value] }
    }

    /// An event as the object its JSON line holds.
    private static func eventObject(_ event: RequestEvent) -> Any {
        (try? JSONSerialization.jsonObject(with: Data(EventLog.line(for: event).utf8))) ?? [String: Any]()
    }

    /// `response.content`: the body as text (UTF-8) or base64 (`encoding`) when the events
    /// carried it; a body cut at the cap or left out says so in `comment`.
    private static func content(size: Int, mimeType: String, answer: (body: RecordedBody, total: Int, truncated: Bool)?) -> [String: Any] {
        var content: [String: Any] = ["size": answer?.total ?? size, "mimeType": mimeType]
        switch answer?.body {
        case .bytes(let data)?:
            if let text = String(data: data, encoding: .utf8) {
                content["text"] = text
            } else {
                content["text"] = data.base64EncodedString()
                content["encoding"] = "base64"
            }
            if answer?.truncated == true { content["comment"] = "truncated: the first \(data.count) of \(answer!.total) bytes (reqtop's body cap)" }
        case .omitted(_, let reason)?:
            content["comment"] = "body not recorded: \(reason)"
        case nil:
            break
        }
        return content
    }

    private static func entry(id: String, attempt: Int, events: [RequestEvent], started: TimeInterval, startedAt: Date,
                              request: SentRequest, shape: HAREntryShape?) -> [String: Any] {
        var taskCreated: TimeInterval?, requestSent: TimeInterval?, responseAt: TimeInterval?, end: TimeInterval?
        var status = 0, responseHeaders: [String: String] = [:], bytes = 0, error: TransportError?
        var responseFields: HTTPFields?
        var responseTrailers: HTTPFields?
        var delay: TimeInterval?, reason: String?, outcome: String?, redirect = ""
        var connection: (at: TimeInterval, id: Int, reused: Bool)?
        var answer: (body: RecordedBody, total: Int, truncated: Bool)?
        var mediaType: String?
        var injected: String?
        var httpVersion = "HTTP/1.1"
        for event in events {
            switch event.payload {
            case .taskCreated: taskCreated = taskCreated ?? event.time
            case .sent: requestSent = event.time
            case .connection(let id, let reused, _): connection = connection ?? (event.time, id, reused)
            case .response(let s, let h, _, let version):
                httpVersion = version ?? httpVersion
                status = s
                responseHeaders = h
                responseFields = nil
                responseAt = event.time
                bytes = 0
            case .headerFields(.response, let fields): responseFields = fields
            case .trailers(.response, let fields): responseTrailers = fields
            case .redirect(_, let location, _, _): redirect = location
            case .data(let count): bytes += count
            case .responseBody(let body, let total, let truncated, let type):
                answer = (body, total, truncated)
                mediaType = type
            case .injected(let fault, let rule, let by): injected = "\(fault) (rule \"\(rule)\", set by \(by))"
            case .taskCompleted(let e):
                error = e
                end = event.time
            case .retryScheduled(let d, let r):
                delay = d
                reason = r
            case .finished(let o, _, _, _, let r):
                outcome = o.rawValue
                reason = r ?? reason
                end = end ?? event.time
            case .queued, .built, .started, .preparationFailed, .uploaded, .requestBody, .headerFields(.request, _), .messages, .trailers, .validationFailed, .retryDenied, .hedged, .breakpoint,
                 .breakpointResolved, .breakpointSet, .breakpointRemoved, .circuitWaiting, .circuitOpened, .circuitHalfOpen,
                 .circuitClosed, .rateLimitWaiting, .rateLimited, .retryBudget, .earlyRetry, .intercepted, .held, .released,
                 .reactorStarted, .reactorWaiting, .reactorFinished, .requeued, .cancelled, .missed, .other: break
            }
        }
        let created = taskCreated ?? started
        let finish = end ?? events.last?.time ?? started
        // With a `connection` event (the NIO transport) the time before it is `connect` for a
        // new connection, or more of `blocked` (waiting for a free one) for a reused one.
        let given = connection.map { min(max(created, $0.at), requestSent ?? $0.at) } ?? created
        let connect = connection.map { $0.reused ? -1 : (given - created) * 1000 } ?? -1
        let blocked = (max(0, created - started) + (connection?.reused == true ? given - created : 0)) * 1000
        // With a `sent` event (the NIO transport) the time to write the request is `send`
        // and `wait` starts when it was written; without one `send` is 0, as before.
        let sent = given
        let written = requestSent.map { max(sent, $0) } ?? sent
        let send = (written - sent) * 1000
        let wait = max(0, (responseAt ?? finish) - written) * 1000
        let receive = responseAt.map { max(0, finish - $0) * 1000 } ?? 0
        // The body's own type where the response named none (an imported entry's `mimeType`).
        let contentType = responseHeaders.value(forHTTPHeader: "Content-Type") ?? mediaType ?? ""
        var reqtop: [String: Any] = [
            "op": id, "attempt": attempt,
            "events": events.map(eventObject),
        ]
        if let delay { reqtop["retryDelay"] = delay }
        if let reason { reqtop["reason"] = reason }
        if let outcome { reqtop["outcome"] = outcome }
        var requestFields: [String: Any] = [
            "method": request.method, "url": request.url, "httpVersion": request.httpVersion, "cookies": shape?.cookiesObject(request: true) ?? [Any](),
            "headers": request.fields.map(Self.pairs) ?? HAREntryShape.pairs(request.headers, order: shape?.requestHeaderOrder ?? []), "queryString": query(request.url), "headersSize": -1,
            "bodySize": request.postData.size,
        ]
        if let postData = request.postData.fields { requestFields["postData"] = postData }
        if let trailers = request.trailers { requestFields["_trailers"] = Self.pairs(trailers) }
        var entry: [String: Any] = [
            "startedDateTime": HARDate.format(startedAt.addingTimeInterval(started)),
            "time": blocked + max(0, connect) + send + wait + receive,
            "request": requestFields,
            "response": [
                "status": status, "statusText": status == 0 ? "" : HTTPURLResponse.localizedString(forStatusCode: status),
                "httpVersion": httpVersion, "cookies": shape?.cookiesObject(request: false) ?? [Any](),
                "headers": responseFields.map(Self.pairs) ?? HAREntryShape.pairs(responseHeaders, order: shape?.responseHeaderOrder ?? []),
                "content": content(size: bytes, mimeType: contentType, answer: answer),
                "redirectURL": redirect, "headersSize": -1, "bodySize": status == 0 ? -1 : bytes,
            ] as [String: Any],
            "cache": [:] as [String: Any],
            "timings": ["blocked": blocked, "dns": -1, "connect": connect, "ssl": -1, "send": send, "wait": wait, "receive": receive],
            "_reqtop": reqtop,
        ]
        if let responseTrailers, var response = entry["response"] as? [String: Any] {
            response["_trailers"] = Self.pairs(responseTrailers)
            entry["response"] = response
        }
        if let connection { entry["connection"] = String(connection.id) }
        // A HAR never passes an injected answer off as the server's.
        if let injected { entry["comment"] = "injected by reqtop: \(injected); not the server's answer" }
        if let error { entry["_error"] = "\(error.code) \(error.message)" }
        return entry
    }

    /// The query's pairs in order, a name given twice given twice (`?id=3&id=9`).
    private static func query(_ url: String) -> [[String: String]] {
        (URLComponents(string: url)?.queryItems ?? []).map { ["name": $0.name, "value": $0.value ?? ""] }
    }
}
