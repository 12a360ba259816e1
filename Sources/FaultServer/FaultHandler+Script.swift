import NIOCore
import NIOHTTP1

/// `reqtop serve --from`: each request answered as its upstream answered it in a recording,
/// after the time the upstream took (``ScriptedAnswers``).
extension FaultHandler {
    func serve(_ script: ScriptedAnswers, head: HTTPRequestHead, context: ChannelHandlerContext) {
        let keepAlive = head.isKeepAlive
        let answer = script.answer(method: head.method.rawValue, target: head.uri, host: head.headers.first(name: "X-Reqtop-Host"),
                                   operation: head.headers.first(name: "X-Reqtop-Operation").map(ScriptedAnswers.operation(headerValue:)),
                                   attempt: head.headers.first(name: "X-Reqtop-Attempt").flatMap { Int($0) })
        guard let answer else {
            respond(context, status: 404, headers: [("X-Reqtop-Not-Recorded", "true")],
                    body: "not in the recording: \(head.method.rawValue) \(head.uri)\n", keepAlive: keepAlive)
            return
        }
        let loop = context.eventLoop.assumeIsolated()
        loop.scheduleTask(in: .milliseconds(Int64((answer.latency * 1000).rounded()))) { [self] in
            switch answer.outcome {
            case .response(let status, let headers, let body):
                switch RecordedAnswerFraming.frame(status: status, headers: headers, body: body) {
                case .answer(let status, let headers, let body, let dropped) where head.method != .HEAD && status != 204 && status != 304
                    && (answer.pace.matters(recordedBytes: body.count) || !answer.trailers.isEmpty) || answer.pace.cut != nil:
                    let note = dropped > 0 ? [(RecordedAnswerFraming.droppedHeadersHeader, "\(dropped)")] : []
                    sendPaced(context, status: status, headers: headers.map { ($0.name, $0.value) } + note, body: body, pace: answer.pace,
                              trailers: answer.trailers, keepAlive: keepAlive)
                case .answer(let status, let headers, let body, let dropped):
                    var buffer = context.channel.allocator.buffer(capacity: body.count)
                    buffer.writeBytes(body)
                    let note = dropped > 0 ? [(RecordedAnswerFraming.droppedHeadersHeader, "\(dropped)")] : []
                    respond(context, status: status, headers: headers.map { ($0.name, $0.value) } + note, buffer: buffer,
                            keepAlive: keepAlive, withBody: head.method != .HEAD)
                case .unservable(let reason):
                    respond(context, status: 502, headers: [(RecordedAnswerFraming.unservableHeader, reason)],
                            body: "cannot answer as recorded: \(reason)\n", keepAlive: keepAlive)
                }
            case .close:
                context.close(promise: nil)
            case .reset:
                reset(context)
            case .hang:
                break
            }
        }
    }

    /// A recorded answer sent the way it came (``BodyPace``): the head, each part at its
    /// time (the recorded bytes, then filler the head names), then the end, or for a cut
    /// body the recorded failure.
    /// - Parameter trailers: sent after the body (then with no length in the head: an
    ///   HTTP/1.1 body is chunked to carry them; HTTP/2 ends with a HEADERS frame).
    private func sendPaced(_ context: ChannelHandlerContext, status: Int, headers: [(String, String)], body: [UInt8], pace: BodyPace,
                           trailers: [ScriptedAnswers.Answer.Trailer] = [], keepAlive: Bool) {
        let parts = pace.schedule(recordedBytes: body.count)
        let total = parts.reduce(0) { $0 + $1.bytes }
        var head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status))
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        // A cut body promises what the recorded head promised; a chunked one (no length
        // recorded) is cut mid-stream, without its last chunk.
        if let promised = pace.cut == nil ? (trailers.isEmpty ? total : nil) : pace.promisedBytes {
            head.headers.add(name: "Content-Length", value: "\(promised)")
        }
        if total > body.count {
            head.headers.add(name: BodyPace.fillerHeader, value: "bytes \(body.count)-\(total - 1) are filler: the recording kept \(body.count) of \(total)")
        }
        if !keepAlive { head.headers.add(name: "Connection", value: "close") }
        context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
        let loop = context.eventLoop.assumeIsolated()
        var offset = 0
        for (index, part) in parts.enumerated() {
            let range = offset..<(offset + part.bytes)
            offset += part.bytes
            let last = index == parts.count - 1
            loop.scheduleTask(in: .microseconds(Int64((part.after * 1_000_000).rounded()))) { [self] in
                guard context.channel.isActive else { return }
                var buffer = context.channel.allocator.buffer(capacity: range.count)
                let kept = range.clamped(to: 0..<body.count)
                if !kept.isEmpty { buffer.writeBytes(body[kept]) }
                buffer.writeRepeatingByte(BodyPace.fillerByte, count: range.count - kept.count)
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
                if last { finish(context, cut: pace.cut, trailers: trailers, keepAlive: keepAlive) }
            }
        }
        if parts.isEmpty { finish(context, cut: pace.cut, trailers: trailers, keepAlive: keepAlive) }
    }

    private func finish(_ context: ChannelHandlerContext, cut: BodyPace.Cut?, trailers: [ScriptedAnswers.Answer.Trailer], keepAlive: Bool) {
        switch cut {
        case .close?: context.close(promise: nil)
        case .reset?: reset(context)
        case .stall?: break
        case nil:
            let done = context.writeAndFlush(wrapOutboundOut(.end(trailers.isEmpty ? nil : HTTPHeaders(trailers.map { ($0.name, $0.value) }))))
            if !keepAlive { done.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
        }
    }
}
