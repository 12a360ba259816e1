import ChannelGlue
import Foundation
import NIOCore
import NIOHTTP1
import RequestOperations

/// A tunnel as a row in the monitor: the bytes a passed-through `CONNECT` or an upgraded
/// connection carries, told as the events any operation's are — `queued` (method `CONNECT`, or
/// the upgrade's own request), `started`, `taskCreated`, then `uploaded` (bytes from the
/// client so far) and `data` (bytes to it) at most twice a second, and `taskCompleted` and
/// `finished` (with the totals) when either side closes. The engine never makes such an
/// operation itself; `reqtop whatif` and `replay --send` leave them out (a tunnel's bytes are
/// not requests that can be sent again). A person can cancel the row (``ExternalRows``): both
/// sides are closed, and the row ends `cancelled` by them.
///
/// Used on the tunnel's event loop only (both channels are on it).
final class TunnelMeter: GlueMeter {
    private let id: String
    private let events: EventHub
    private let openedAt: TimeInterval
    private let loop: EventLoop
    /// Where the row can be cancelled from, once both sides are joined.
    private var rows: ExternalRows?
    private var cancelledBy: String?
    private var up = 0, down = 0
    private var toldUp = 0, toldDown = 0
    private var ticking: RepeatedTask?
    private var closed = false
    /// The upstream's answer to an upgrade, once it came.
    private var status: Int?
    /// A WebSocket's messages each way, read as they pass (after a `101` to `Upgrade:
    /// websocket`); nil for any other tunnel.
    private var webSocket: (up: WebSocketMessages, down: WebSocketMessages)?
    private var toldMessages = (up: 0, down: 0)

    /// Publishes the row's start: `method` and `url` as the client asked (`CONNECT
    /// https://host:port`, or the upgrade's request).
    init(id: String, method: String, url: String, headers: [String: String], origin: String?, events: EventHub, on loop: EventLoop) {
        self.id = id
        self.events = events
        self.loop = loop
        var options = RecordedOptions()
        options.origin = origin
        openedAt = events.publish(operation: id, attempt: 1, .queued(method: method, url: url, headers: headers, maxAttempts: 1, options: options)).time
        _ = events.publish(operation: id, attempt: 1, .started)
        _ = events.publish(operation: id, attempt: 1, .taskCreated(taskIdentifier: 0, url: url))
        let meter = NIOLoopBound(self, eventLoop: loop)
        ticking = loop.scheduleRepeatedTask(initialDelay: .milliseconds(500), delay: .milliseconds(500)) { _ in meter.value.tell() }
    }

    /// From now on a person can cancel the row: `sides` (the client's and the upstream's
    /// channels, on this meter's loop) are closed, and the row ends cancelled.
    func cancellable(in rows: ExternalRows, closing sides: [Channel]) {
        guard !closed else { return }
        self.rows = rows
        let meter = NIOLoopBound(self, eventLoop: loop)
        rows.add(id) { [loop] who in
            loop.execute {
                meter.value.cancelledBy = meter.value.cancelledBy ?? who
                sides.forEach { $0.close(promise: nil) }
            }
        }
    }

    /// An upgrade's answer came (`101`, or a refusal passed to the client): a `response`.
    func answered(status: Int, headers: HTTPHeaders, keeping limit: Int = 0) {
        self.status = status
        if status == 101, headers[canonicalForm: "Upgrade"].contains(where: { $0.lowercased() == "websocket" }) {
            webSocket = (WebSocketMessages(limit: limit), WebSocketMessages(limit: limit))
        }
        _ = events.publish(operation: id, attempt: 1, .response(status: status, headers: headers.joinedByName(), expectedBytes: nil, httpVersion: "HTTP/1.1"))
    }

    func countUp(_ bytes: Int) { up += bytes }
    func countDown(_ bytes: Int) { down += bytes }

    func passed(_ bytes: ByteBuffer, fromFirstSide: Bool) {
        if fromFirstSide {
            up += bytes.readableBytes
            webSocket?.up.read(bytes)
        } else {
            down += bytes.readableBytes
            webSocket?.down.read(bytes)
        }
    }

    /// The bytes since the last time, as `uploaded` (the total from the client) and `data`.
    private func tell() {
        if up != toldUp {
            toldUp = up
            _ = events.publish(operation: id, attempt: 1, .uploaded(bytes: up, totalBytes: nil))
        }
        if down != toldDown {
            _ = events.publish(operation: id, attempt: 1, .data(bytes: down - toldDown))
            toldDown = down
        }
        if let webSocket, (webSocket.up.messages, webSocket.down.messages) != toldMessages {
            toldMessages = (webSocket.up.messages, webSocket.down.messages)
            _ = events.publish(operation: id, attempt: 1, .messages(fromClient: webSocket.up.messages, toClient: webSocket.down.messages))
        }
    }

    /// A WebSocket's first bytes each way, as the row's request and response bodies, and its
    /// counts in words for the `finished` reason.
    private func toldWebSocket() -> String? {
        guard let webSocket else { return nil }
        func body(_ side: WebSocketMessages) -> (RecordedBody, Int, Bool, String?) {
            let type = side.compressed ? "application/octet-stream (permessage-deflate: compressed)" : nil
            return (.bytes(side.kept), side.payloadBytes, side.kept.count < side.payloadBytes, type)
        }
        if !webSocket.up.kept.isEmpty {
            let (kept, total, truncated, type) = body(webSocket.up)
            _ = events.publish(operation: id, attempt: 1, .requestBody(body: kept, totalBytes: total, truncated: truncated, mediaType: type))
        }
        if !webSocket.down.kept.isEmpty {
            let (kept, total, truncated, type) = body(webSocket.down)
            _ = events.publish(operation: id, attempt: 1, .responseBody(body: kept, totalBytes: total, truncated: truncated, mediaType: type))
        }
        func words(_ side: WebSocketMessages) -> String {
            "\(side.messages) message\(side.messages == 1 ? "" : "s") (\(side.payloadBytes) bytes)"
                + (side.controlFrames > 0 ? " and \(side.controlFrames) control frame\(side.controlFrames == 1 ? "" : "s")" : "")
        }
        guard webSocket.up.isWebSocket, webSocket.down.isWebSocket else { return "not WebSocket frames after the 101" }
        return "WebSocket: \(words(webSocket.up)) from the client, \(words(webSocket.down)) to it"
    }

    /// The tunnel never opened: the client refused it (``ClientHandshakeWatch``). The row ends
    /// failed, with `reason`.
    func refused(reason: String) {
        guard !closed else { return }
        closed = true
        ticking?.cancel()
        let failure = TransportError(code: URLError.Code.secureConnectionFailed.rawValue, message: reason)
        _ = events.publish(operation: id, attempt: 1, .taskCompleted(error: failure))
        _ = events.publish(operation: id, attempt: 1, .finished(outcome: .failure, status: nil, attempts: 1, duration: events.elapsed() - openedAt,
                                                             reason: reason))
    }

    /// Either side closed (`error`: how, when not cleanly), or a person cancelled the row: it
    /// ends with the totals.
    func close(_ error: Error?) {
        guard !closed else { return }
        closed = true
        rows?.remove(id)
        ticking?.cancel()
        tell()
        let messages = toldWebSocket()
        let totals = "tunnel closed: \(up) bytes from the client, \(down) to it" + (messages.map { "; \($0)" } ?? "")
        if let who = cancelledBy {
            _ = events.publish(operation: id, attempt: 1, .cancelled(by: who))
            _ = events.publish(operation: id, attempt: 1, .taskCompleted(error: TransportError(code: URLError.Code.cancelled.rawValue,
                                                                                                  message: "cancelled by \(who)")))
            _ = events.publish(operation: id, attempt: 1, .finished(outcome: .cancelled, status: nil, attempts: 1, duration: events.elapsed() - openedAt,
                                                                 reason: "cancelled by \(who); \(totals)"))
            return
        }
        let failure = error.map { TransportError(code: URLError.Code.networkConnectionLost.rawValue, message: "\($0)") }
        _ = events.publish(operation: id, attempt: 1, .taskCompleted(error: failure))
        let duration = events.elapsed() - openedAt
        _ = events.publish(operation: id, attempt: 1, .finished(outcome: failure == nil ? .success : .failure, status: status, attempts: 1, duration: duration,
                                                             reason: totals))
    }
}
