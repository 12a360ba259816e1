import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import RequestOperations
import Synchronization

/// One client request, run as one operation on the proxy's queue, and its answer written
/// back: the upstream's answer as it came (its body streamed with back-pressure: a part is
/// written, and the next read, once the client took it), or one of the proxy's own
/// (``ProxyFailureAnswer``) when there was none to pass on.
final class ProxyExchange: Sendable {
    let id: String
    private let channel: Channel
    private let proxy: ProxyContext
    private let client: ClientOrigin
    private let version: HTTPVersion
    private let keepAlive: Bool
    private let isHead: Bool
    private let state = Mutex(State())

    private struct State {
        var request: URLRequest?
        var task: Task<Void, Never>?
        var underWay = false
        var clientGone = false
        /// The client's request has come whole (true), or never will (false: it went away or
        /// sent what could not be read, and was answered 400). Nil while its body streams.
        var requestComplete: Bool?
        var waitingForRequest: CheckedContinuation<Bool, Never>?
    }

    /// The error an upload ends with when the client went away mid-body.
    struct ClientGone: Error, CustomStringConvertible {
        var description: String { "the client closed the connection before its request body ended" }
    }

    /// Who an operation is cancelled by when its client went away.
    static let clientCanceller = "client"

    init(id: String, channel: Channel, proxy: ProxyContext, client: ClientOrigin, version: HTTPVersion, keepAlive: Bool, isHead: Bool) {
        self.id = id
        self.channel = channel
        self.proxy = proxy
        self.client = client
        self.version = version
        self.keepAlive = keepAlive
        self.isHead = isHead
    }

    /// Whether the request is still being answered (the connection is not idle).
    var isUnderWay: Bool { state.withLock { $0.underWay } }

    /// Keeps `request` until its body has come (``startPrepared(body:)``).
    func prepare(_ request: URLRequest) {
        state.withLock { $0.request = request; $0.underWay = true }
    }

    /// The streamed request body ended whole: the answer may be written.
    func requestEnded() {
        settleRequest(true)
    }

    /// The client's request will not come whole: no answer is written to it.
    func requestBroken() {
        settleRequest(false)
    }

    private func settleRequest(_ whole: Bool) {
        let waiting = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard state.requestComplete == nil else { return nil }
            state.requestComplete = whole
            defer { state.waitingForRequest = nil }
            return state.waitingForRequest
        }
        waiting?.resume(returning: whole)
    }

    /// Waits until the request came whole (true) or never will (false). An answer is written
    /// only after the request: HTTP/1.1 allows an early one, but NIO's server pipeline (and
    /// many clients) do not expect it, and an upstream that answered early let go of the body.
    private func requestCame() async -> Bool {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool? in
                if let complete = state.requestComplete { return complete }
                state.waitingForRequest = continuation
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    func startPrepared(body: Data?) {
        settleRequest(true)
        guard var request = state.withLock({ $0.request }) else { return }
        // The transport frames the body it is given: the client's length would go out twice.
        request.setValue(nil, forHTTPHeaderField: "Content-Length")
        let method = request.httpMethod ?? "GET"
        request.httpBody = body ?? (["POST", "PUT", "PATCH"].contains(method) ? Data() : nil)
        start(request)
    }

    /// Starts the operation (its body, if streamed, still arriving).
    func start(_ request: URLRequest) {
        let task = Task { await self.run(request) }
        let gone = state.withLock { state -> Bool in
            (state.task, state.underWay, state.request) = (task, true, nil)
            return state.clientGone
        }
        if gone { clientWentAway() }
    }

    /// The client closed its connection: the operation is cancelled (by `client`), whatever
    /// stage it is in.
    func clientWentAway() {
        settleRequest(false)
        let task = state.withLock { state -> Task<Void, Never>? in
            state.clientGone = true
            return state.task
        }
        guard let task else { return }
        proxy.queue.operation(withID: id)?.cancel(by: Self.clientCanceller)
        task.cancel()
    }

    private func run(_ request: URLRequest) async {
        defer { state.withLock { $0.underWay = false } }
        let answer: StreamedResponse
        do {
            var options = Self.options(proxy.options.operation(for: request.url?.host), for: request)
            options.origin = await client.program
            answer = try await proxy.queue.stream(for: request, id: id, options: options, bufferSize: proxy.options.downloadBuffer)
        } catch let error as RequestError {
            guard await requestCame() else { return channel.close(promise: nil) }
            if let status = error.result.status {
                // The upstream's own answer, which the engine judged a failure (a 404, a 503):
                // passed on as it came.
                var headers = HopByHopHeaders.removed(from: error.result.headers, repeated: error.result.repeatedHeaders)
                    .filter { $0.0.lowercased() != "content-length" }
                headers.append(("Content-Length", String(error.result.data.count)))
                await answerWhole(status: status, headers: headers, body: error.result.data)
            } else {
                let failure = ProxyFailureAnswer(error.reason)
                await answerWhole(status: failure.status, headers: failure.headers, body: Data(failure.body.utf8))
            }
            return
        } catch {
            // The client went away (CancellationError): nobody to answer.
            channel.close(promise: nil)
            return
        }
        guard await requestCame() else {
            answer.operation.cancel(by: Self.clientCanceller)
            return channel.close(promise: nil)
        }
        do {
            channel.write(HTTPServerResponsePart.head(head(status: answer.status, headers: HopByHopHeaders.removed(from: answer.headers, repeated: answer.repeatedHeaders))),
                          promise: nil)
            for try await part in answer.body {
                let written = channel.eventLoop.makePromise(of: Void.self)
                channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(data: part))), promise: written)
                // Back-pressure: past the channel's high-water mark, the next part is read from
                // the upstream only once this one went out (waiting for every write cost a
                // round trip through the event loop per part: a download ran at 0.2 of direct).
                if !channel.isWritable { try await written.futureResult.get() }
            }
            try await end()
        } catch {
            // The upstream failed mid-body, or the client went away: the client sees the
            // connection end short of the length it was told (or without the last chunk).
            channel.close(promise: nil)
        }
    }

    /// `options` for `request`: a body streamed from the client is read once, so such a
    /// request is sent once — never retried or hedged, whatever the configuration says.
    static func options(_ options: RequestOptions, for request: URLRequest) -> RequestOptions {
        guard request.httpBodyStream != nil else { return options }
        var once = options
        once.retryPolicy = ExponentialBackoffRetryPolicy.never
        once.hedge = nil
        return once
    }

    private func head(status: Int, headers: [(String, String)]) -> HTTPResponseHead {
        var fields = HTTPHeaders(headers)
        if !keepAlive { fields.replaceOrAdd(name: "Connection", value: "close") }
        return HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: status), headers: fields)
    }

    private func answerWhole(status: Int, headers: [(String, String)], body: Data) async {
        do {
            channel.write(HTTPServerResponsePart.head(head(status: status, headers: headers)), promise: nil)
            if !isHead, !body.isEmpty { channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(data: body))), promise: nil) }
            try await end()
        } catch {
            channel.close(promise: nil)
        }
    }

    private func end() async throws {
        try await channel.writeAndFlush(HTTPServerResponsePart.end(nil)).get()
        if !keepAlive { try? await channel.close().get() }
    }
}
