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
}
