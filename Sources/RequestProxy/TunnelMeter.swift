import ChannelGlue
import Foundation
import NIOCore
import NIOHTTP1
import RequestOperations

/// A tunnel as a row in the monitor: the bytes a passed-through `CONNECT` or an upgraded
/// connection carries, told as the events any operation's are (an ``ExternalRow``) — `queued`
/// (method `CONNECT`, or the upgrade's own request), `started`, `taskCreated`, then `uploaded`
/// (bytes from the client so far) and `data` (bytes to it) at most twice a second, and
/// `taskCompleted` and `finished` (with the totals) when either side closes. The engine never makes such an
/// operation itself; `reqtop whatif` and `replay --send` leave them out (a tunnel's bytes are
/// not requests that can be sent again). A person can cancel the row (``ExternalRows``): both
/// sides are closed, and the row ends `cancelled` by them.
///
/// Used on the tunnel's event loop only (both channels are on it).
final class TunnelMeter: GlueMeter {
    private var row: ExternalRow
    private let loop: EventLoop
    /// Where the row can be cancelled from, once both sides are joined.
    private var rows: ExternalRows?
    private var cancelledBy: String?
    private var up = 0, down = 0
    private var ticking: RepeatedTask?
    /// A WebSocket's messages each way, read as they pass (after a `101` to `Upgrade:
    /// websocket`); nil for any other tunnel.
    private var webSocket: (up: WebSocketMessages, down: WebSocketMessages)?
    private var toldMessages = (up: 0, down: 0)

    /// Publishes the row's start: `method` and `url` as the client asked (`CONNECT
    /// https://host:port`, or the upgrade's request).
    init(id: String, method: String, url: String, headers: [String: String], origin: String?, events: EventHub, on loop: EventLoop) {
        row = ExternalRow(id: id, method: method, url: url, headers: headers, origin: origin, events: events)
        self.loop = loop
        let meter = NIOLoopBound(self, eventLoop: loop)
        ticking = loop.scheduleRepeatedTask(initialDelay: .milliseconds(500), delay: .milliseconds(500)) { _ in meter.value.tell() }
    }

    /// From now on a person can cancel the row: `sides` (the client's and the upstream's
    /// channels, on this meter's loop) are closed, and the row ends cancelled.
    func cancellable(in rows: ExternalRows, closing sides: [Channel]) {
        guard !row.hasEnded else { return }
        self.rows = rows
        let meter = NIOLoopBound(self, eventLoop: loop)
        rows.add(row.id) { [loop] who in
            loop.execute {
                meter.value.cancelledBy = meter.value.cancelledBy ?? who
                sides.forEach { $0.close(promise: nil) }
            }
        }
    }

    /// An upgrade's answer came (`101`, or a refusal passed to the client): a `response`.
    func answered(status: Int, headers: HTTPHeaders, keeping limit: Int = 0) {
        if status == 101, headers[canonicalForm: "Upgrade"].contains(where: { $0.lowercased() == "websocket" }) {
            webSocket = (WebSocketMessages(limit: limit), WebSocketMessages(limit: limit))
        }
        row.publish(.response(status: status, headers: headers.joinedByName(), expectedBytes: nil, httpVersion: "HTTP/1.1"))
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
        row.progress(sent: up, received: down)
        if let webSocket, (webSocket.up.messages, webSocket.down.messages) != toldMessages {
            toldMessages = (webSocket.up.messages, webSocket.down.messages)
            row.publish(.messages(fromClient: webSocket.up.messages, toClient: webSocket.down.messages))
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
            row.publish(.requestBody(body: kept, totalBytes: total, truncated: truncated, mediaType: type))
        }
        if !webSocket.down.kept.isEmpty {
            let (kept, total, truncated, type) = body(webSocket.down)
            row.publish(.responseBody(body: kept, totalBytes: total, truncated: truncated, mediaType: type))
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
        guard !row.hasEnded else { return }
        ticking?.cancel()
        row.end(error: reason, code: .secureConnectionFailed, reason: reason)
    }

    /// Either side closed (`error`: how, when not cleanly), or a person cancelled the row: it
    /// ends with the totals.
    func close(_ error: Error?) {
        guard !row.hasEnded else { return }
        rows?.remove(row.id)
        ticking?.cancel()
        tell()
        let messages = toldWebSocket()
        let totals = "tunnel closed: \(up) bytes from the client, \(down) to it" + (messages.map { "; \($0)" } ?? "")
        if let who = cancelledBy {
            row.cancelled(by: who, reason: totals)
        } else {
            row.end(error: error.map { "\($0)" }, reason: totals)
        }
    }
}
