import AsyncHTTPClient
import Foundation
import HTTPTypes
import Logging
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOHTTPTypesHTTP1
import RequestOperations
import Synchronization

/// One task of ``NIOTransport``: a request and the redirects it follows, each hop one
/// AsyncHTTPClient request, reported to the handler as one URLSession-like task.
///
/// Callbacks come from the hop's event loop, one hop at a time, so they are serial; a late
/// callback of a hop that was left (for a redirect, or cancelled) is dropped by its number.
///
/// `start()` and `cancel()` never call back before they return (the engine calls them
/// holding the operation's lock): AsyncHTTPClient runs a request, or a cancel, inline when
/// asked on an event loop — the request's head is written and `didSendRequest` called before
/// `execute` returns — so both are handed to an event loop first. (Seen in CI: a slot freed
/// on an event loop started the next request there, and its `sent` callback took the lock
/// the engine held: "Recursive call to lock Mutex".)
final class NIOExchange: Sendable {
    static let maxRedirects = 16

    private struct State {
        var request: RequestMessage
        /// The hop under way (bumped for each redirect followed); callbacks of others are dropped.
        var hop = 0
        var redirects = 0
        var running: HTTPClient.Task<Void>?
        var started = false
        var cancelled = false
        var completed = false
        /// The last hop whose connection was reported (once per hop).
        var connectionReported = -1
        /// Body bytes written for hop `bodyHop` (a redirect that re-sends the body counts anew).
        var bodySent = 0
        var bodyHop = -1
        /// Reading waits for the engine's room (see ``received(_:hop:on:)``).
        var waitingForRoom: EventLoopPromise<Void>?
        var roomSignalled = false
        /// The answer's trailers and the hop they came on, held until the hop completes.
        var trailers: (hop: Int, fields: HTTPFields)?
        /// Registered with the tap (a request that wants trailers): forgotten at completion.
        var tagged = false
    }

    let identifier: Int
    private let handler: TransportCallbacks
    /// The transport's client for a URL: direct, or through its proxy (each hop asks).
    let clients: NIOClients
    private let connections: ConnectionLedger
    /// Where a request that wants trailers is found by its tap (``TrailerTap``).
    private let trailers: TrailerRegistry?
    /// Where `start()` and `cancel()` do their work, after returning.
    private let eventLoop: EventLoop
    private let state: Mutex<State>

    init(identifier: Int, request: RequestMessage, handler: TransportCallbacks, clients: NIOClients, connections: ConnectionLedger,
         trailers: TrailerRegistry? = nil) {
        self.identifier = identifier
        self.trailers = trailers
        self.handler = handler
        self.clients = clients
        self.connections = connections
        eventLoop = clients.direct.eventLoopGroup.any()
        state = Mutex(State(request: request))
    }

    func start() {
        let go = state.withLock { state -> (RequestMessage, Int)? in
            guard !state.started, !state.cancelled else { return nil }
            state.started = true
            return (state.request, state.hop)
        }
        guard let (request, hop) = go else { return }
        eventLoop.execute { self.send(request, hop: hop) }
    }

    func cancel() {
        let running = state.withLock { state -> HTTPClient.Task<Void>?? in
            guard !state.completed, !state.cancelled else { return nil }
            state.cancelled = true
            return .some(state.running)
        }
        guard let running else { return }
        eventLoop.execute {
            if let running {
                // The client reports the cancellation through didReceiveError.
                running.cancel()
                // Reading that waited for the engine's room waits no more (a promise is
                // never left unfulfilled).
                self.resumeReading()
            } else {
                // Not sent yet (or between hops): report it here.
                self.complete(hop: nil, URLError(.cancelled))
            }
        }
    }

    private func send(_ request: RequestMessage, hop: Int) {
        let outgoing: HTTPClient.Request
        do {
            let tagged = trailers != nil && handler.wantsTrailers
            outgoing = try Self.clientRequest(request, offeringEncodings: clients.decodesBodies, trailerTag: tagged ? identifier : nil)
            if tagged {
                trailers?.register(self)
                state.withLock { $0.tagged = true }
            }
        } catch {
            complete(hop: hop, NIOErrorMapping.urlError(error))
            return
        }
        let delegate = NIOHopDelegate(exchange: self, hop: hop, url: request.url)
        // Strong: the client keeps the logger only while the hop runs (a weak reference would
        // give every exchange a side table, and slow every retain of it).
        let logger = Logger(label: "reqtop.nio") { _ in
            ConnectionReportingLogHandler { connection in self.usedConnection(connection, hop: hop) }
        }
        let task = clients.client(for: request.url, allowsHTTP2: request.allowsHTTP2).execute(request: outgoing, delegate: delegate, logger: logger)
        let cancelledMeanwhile = state.withLock { state -> Bool in
            guard state.hop == hop else { return true }
            state.running = task
            return state.cancelled
        }
        if cancelledMeanwhile { task.cancel() }
    }

    /// - Parameter offeringEncodings: add `Accept-Encoding: gzip, deflate` when the request has
    ///   none (the transport decodes what it offered); false when bodies pass as they came.
    /// - Parameter trailerTag: the task's number, for the ``TrailerTap`` that reads its answer's
    ///   trailers and sends its own.
    /// The head goes as the message's fields are: in their order, each repeat apart, spelled as
    /// they are.
    static func clientRequest(_ request: RequestMessage, offeringEncodings: Bool = true, trailerTag: Int? = nil) throws -> HTTPClient.Request {
        let url = request.url
        // AsyncHTTPClient traps on a port past 16 bits: a URL from a client, a plan or a
        // server's redirect must be an error, never the process's end.
        if let port = url.port, !(1...65535).contains(port) {
            throw URLError(.badURL, userInfo: [NSLocalizedDescriptionKey: "bad URL: port \(port) is not between 1 and 65535"])
        }
        var headers = HTTPHeaders()
        headers.reserveCapacity(request.headerFields.count + 2)
        for field in request.headerFields { headers.add(name: field.name.rawName, value: field.value) }
        // What the decoder reads, unless the caller asked for something else (libcurl offers
        // its own list on the URLSession transport: deflate, gzip, br, zstd).
        if offeringEncodings, !headers.contains(name: "Accept-Encoding") { headers.add(name: "Accept-Encoding", value: "gzip, deflate") }
        // The tag names a task to the tap: only this transport may set it. One a client sent
        // (through the proxy) would have handed another request's trailers to it.
        headers.remove(name: TrailerTap.tag)
        if let trailerTag { headers.add(name: TrailerTap.tag, value: String(trailerTag)) }
        var body: HTTPClient.Body?
        switch request.body {
        case .none:
            break
        case .data(let data):
            body = .bytes(data)
        case .stream(let stream):
            if let parts = stream.parts {
                // A body whose parts come from a socket is asked for them: no thread waits on it.
                body = PartsBody.body(parts, length: streamedLength(&headers))
            } else if let input = stream.take() {
                body = StreamedBody.body(input, length: streamedLength(&headers))
            } else {
                throw URLError(.requestBodyStreamExhausted, userInfo: [NSLocalizedDescriptionKey: "the request's body is a stream that was sent already"])
            }
        }
        return try HTTPClient.Request(url: url, method: HTTPMethod(rawValue: request.method), headers: headers, body: body)
    }

    /// The length the caller gave a streamed body (a body file's size), taken out of
    /// `headers`: AsyncHTTPClient writes the header from it, and chunks a stream of unknown length.
    private static func streamedLength(_ headers: inout HTTPHeaders) -> Int64? {
        let length = headers.first(name: "Content-Length").flatMap { Int64($0) }
        headers.remove(name: "Content-Length")
        return length
    }

    // MARK: - From the hop's delegate

    func isCurrent(_ hop: Int) -> Bool {
        state.withLock { $0.hop == hop && !$0.completed }
    }

    /// `HTTP/1.1`, `HTTP/2.0`: the usual two without formatting a string.
    static func versionText(_ version: HTTPVersion) -> String {
        switch (version.major, version.minor) {
        case (1, 1): "HTTP/1.1"
        case (2, 0): "HTTP/2.0"
        default: "HTTP/\(version.major).\(version.minor)"
        }
    }

    /// A response head: a redirect to follow, or the response.
    func received(_ head: HTTPResponseHead, hop: Int, url: URL) {
        guard isCurrent(hop) else { return }
        let response = TransportResponse(url: url, statusCode: Int(head.status.code), httpVersion: Self.versionText(head.version),
                                         // NIO's HTTP/2-to-HTTP/1 codec adds `transfer-encoding: chunked` to a head
                                         // of no length; HTTP/2 has no such field, and the server never sent it.
                                         fields: head.headers.lazy.filter { head.version.major < 2 || $0.name.lowercased() != "transfer-encoding" }
                                             .map { ($0.name, $0.value) },
                                         keepingFields: handler.wantsFieldsAsWritten)
        if let next = redirect(for: head, from: url, response: response, hop: hop) {
            follow(next, leaving: hop)
            return
        }
        // A redirect that ended the exchange (too many, or refused) leaves nothing to report.
        guard isCurrent(hop) else { return }
        if handler.task(identifier, didReceive: response) == .cancel { cancel() }
    }

    func usedConnection(_ connection: Int, hop: Int) {
        let first = state.withLock { state -> Bool in
            guard state.hop == hop, !state.completed, state.connectionReported < hop else { return false }
            state.connectionReported = hop
            return true
        }
        guard first else { return }
        let url = state.withLock { $0.request.url }
        handler.task(identifier, didUseConnection: connection, reused: !connections.firstUse(of: connection),
                     via: clients.proxyName(for: url))
    }

    func sentRequest(hop: Int) {
        guard isCurrent(hop) else { return }
        handler.taskDidSendRequest(identifier)
    }

    /// `count` more bytes of the hop's request body were written.
    func sentBody(_ count: Int, hop: Int) {
        guard isCurrent(hop) else { return }
        let sent = state.withLock { state -> Int in
            if state.bodyHop != hop { (state.bodySent, state.bodyHop) = (0, hop) }
            state.bodySent += count
            return state.bodySent
        }
        handler.task(identifier, didSendBodyBytes: sent)
    }

    /// A part of the body; nil to read on, or a future the connection's reading waits for
    /// (the engine's stream is full: AsyncHTTPClient reads no more until it completes, when
    /// the engine calls ``resumeReading()``).
    func received(_ data: Data, hop: Int, on loop: EventLoop) -> EventLoopFuture<Void>? {
        guard isCurrent(hop), !handler.task(identifier, didReceivePaced: data) else { return nil }
        let room = loop.makePromise(of: Void.self)
        let already = state.withLock { state -> Bool in
            // The reader may have made room between the `false` and here.
            if state.roomSignalled {
                state.roomSignalled = false
                return true
            }
            state.waitingForRoom = room
            return false
        }
        if already { room.succeed() }
        return room.futureResult
    }

    /// The engine has room for more of the answer: the connection's reading goes on.
    func resumeReading() {
        let room = state.withLock { state -> EventLoopPromise<Void>? in
            guard let room = state.waitingForRoom else {
                state.roomSignalled = true
                return nil
            }
            state.waitingForRoom = nil
            return room
        }
        room?.succeed()
    }

    /// `work` after the parts the connection has read now were delivered: a task on the
    /// hop's event loop runs when the loop's turn of reading is over.
    func afterReads(_ work: @escaping @Sendable () -> Void) {
        guard let loop = state.withLock({ $0.running?.eventLoop }) else { return work() }
        loop.execute(work)
    }

    /// The answer's trailers, read by the tap before the client saw the end: held, and told
    /// just before the completion. The tap reads them on the connection's event loop, and the
    /// client may tell its delegate of the head on another (a reused connection): told at once,
    /// they could come before the head, which starts a new answer without them.
    func receivedTrailers(_ fields: HTTPFields) {
        state.withLock { state in
            guard !state.completed else { return }
            state.trailers = (state.hop, fields)
        }
    }

    /// The request's own trailers, once its body ended (a proxy's client's).
    var requestTrailers: HTTPHeaders? {
        let parts = state.withLock { $0.request.body.stream?.parts }
        return parts?.trailers.map(HTTPHeaders.init)
    }

    /// The hop ended (error nil: the exchange completed).
    func complete(hop: Int?, _ error: URLError?) {
        let finish = state.withLock { state -> (Bool, HTTPFields?, Bool) in
            guard !state.completed, hop == nil || state.hop == hop else { return (false, nil, false) }
            state.completed = true
            state.running = nil
            return (true, state.trailers.flatMap { $0.hop == state.hop ? $0.fields : nil }, state.tagged)
        }
        guard finish.0 else { return }
        // Only a tagged exchange is in the registry: the others (every library request) skip its lock.
        if finish.2 { trailers?.forget(identifier) }
        if error == nil, let fields = finish.1 { handler.task(identifier, didReceiveTrailers: fields) }
        resumeReading()
        handler.task(identifier, didCompleteWithError: error)
    }

    // MARK: - Redirects

    private func redirect(for head: HTTPResponseHead, from url: URL, response: TransportResponse, hop: Int) -> RequestMessage? {
        let status = Int(head.status.code)
        guard [301, 302, 303, 307, 308].contains(status), let location = head.headers.first(name: "Location"),
              let target = URL(string: location, relativeTo: url)?.absoluteURL else { return nil }
        let (current, redirects) = state.withLock { ($0.request, $0.redirects) }
        guard redirects < Self.maxRedirects else {
            complete(hop: hop, URLError(.httpTooManyRedirects))
            return nil
        }
        var next = current
        next.url = target
        let method = current.method
        if status == 303 && method != "HEAD" || (status == 301 || status == 302) && method == "POST" {
            next.method = "GET"
            next.body = .none
            next.headerFields[.contentType] = nil
            next.headerFields[.contentLength] = nil
        }
        guard let followed = handler.task(identifier, willRedirect: response.httpURLResponse(), to: next) else { return nil }
        // The engine refuses other schemes (RedirectSafety); a handler of one's own may not,
        // and AsyncHTTPClient would follow `http+unix://` into a local socket.
        guard let scheme = followed.url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            complete(hop: hop, URLError(.unsupportedURL))
            return nil
        }
        return followed
    }

    private func follow(_ request: RequestMessage, leaving hop: Int) {
        let next = state.withLock { state -> (HTTPClient.Task<Void>?, Int)? in
            guard state.hop == hop, !state.completed, !state.cancelled else { return nil }
            state.hop += 1
            state.redirects += 1
            state.request = request
            let leaving = state.running
            state.running = nil
            return (leaving, state.hop)
        }
        guard let (leaving, hop) = next else { return }
        leaving?.cancel()
        send(request, hop: hop)
    }
}
