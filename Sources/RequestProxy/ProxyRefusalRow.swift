import Foundation
import HTTPTypes
import NIOHTTP1
import RequestOperations

/// A request the proxy answered itself and never sent on — a `407` for want of credentials, a
/// `400` for a request it could not read or a target it cannot reach, a `501` transfer coding,
/// a `508` loop, a `413`, a `503` while it stops — as a row of the queue's events, so that a
/// person whose client failed through the proxy sees why, in the monitor, a recording and HAR,
/// beside the requests that went through. Before, such a request left no trace but the answer
/// the client got.
///
/// An ``ExternalRow`` (the engine never ran it): `queued` with the method, target and headers
/// as the client sent them (redacted on the way out, as every row's) and
/// ``RecordedOptions/refusedByProxy`` (so `whatif` and `replay --send` leave it out: it reached
/// no server), `headerFields` (the request's fields as said: a repeated `Host` shows
/// twice), `started`, `taskCreated`, `response` (the proxy's status and headers),
/// `data` and `responseBody` (its one line of words), `taskCompleted` and `finished` — a
/// failure with the answer's status, its reason `refused by the proxy: …`.
///
/// A request NIO's parser could not read has no method or target to show: its row has an
/// empty method and target and says what was wrong.
enum ProxyRefusalRow {
    /// What a refused request's row says it was.
    struct Request {
        let method: String
        let target: String
        /// One value per name, as every row's `queued` has them.
        let headers: [String: String]
        let fields: HTTPFields

        /// `head` as the client sent it; `origin`: the host a tunnel's requests go to (their
        /// targets are paths).
        init(_ head: HTTPRequestHead, origin: URL?) {
            method = head.method.rawValue
            if let origin, head.uri.hasPrefix("/"), let scheme = origin.scheme, let host = origin.host {
                let port = origin.port.map { ":\($0)" } ?? ""
                target = "\(scheme)://\(host.contains(":") ? "[\(host)]" : host)\(port)\(head.uri)"
            } else {
                target = head.uri
            }
            // Every field as it came, `Host` too (NIO's HTTPFields(_:splitCookie:) leaves it out).
            fields = FieldMerge.fields(head.headers.lazy.map { ($0.name, $0.value) })
            headers = head.headers.joinedByName()
        }

        /// A request whose head could not be read.
        static let unread = Request(method: "", target: "", headers: [:], fields: HTTPFields())

        private init(method: String, target: String, headers: [String: String], fields: HTTPFields) {
            (self.method, self.target, self.headers, self.fields) = (method, target, headers, fields)
        }
    }

    /// Publishes row `id` for `request`, refused with `answer` (sent with `extra` headers, and
    /// `Connection: close` when `closing`), asked by `program` (the PROGRAM column: who was
    /// refused); `leftOut`: the refusals before it shown by no row (``RefusalRowBudget``).
    static func publish(id: String, request: Request, answer: ProxyFailureAnswer, extra: [(String, String)], closing: Bool, leftOut: Int,
                        program: String?, events: EventHub) {
        var options = RecordedOptions()
        (options.origin, options.refusedByProxy) = (program, true)
        var row = ExternalRow(id: id, method: request.method, url: request.target, headers: request.headers, options: options, events: events)
        if !request.fields.isEmpty { row.publish(.headerFields(side: .request, fields: request.fields)) }
        let answerHeaders = answer.headers + extra + (closing ? [("Connection", "close")] : [])
        row.publish(.response(status: answer.status, headers: Dictionary(answerHeaders, uniquingKeysWith: { first, _ in first }),
                              expectedBytes: answer.body.utf8.count, httpVersion: "HTTP/1.1"))
        row.progress(sent: 0, received: answer.body.utf8.count)
        row.publish(.responseBody(body: .bytes(Data(answer.body.utf8)), totalBytes: answer.body.utf8.count, truncated: false,
                                  mediaType: "text/plain; charset=utf-8"))
        let flood = leftOut == 0 ? "" : " (and \(leftOut) refused before it with no row: more than \(RefusalRowBudget.defaultPerSecond) a second)"
        row.fail(reason: "refused by the proxy: \(answer.message)" + flood)
    }
}
