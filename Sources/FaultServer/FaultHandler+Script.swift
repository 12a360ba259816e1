import NIOCore
import NIOHTTP1

/// `reqtop serve --from`: each request answered as its upstream answered it in a recording,
/// after the time the upstream took (``ScriptedAnswers``).
extension FaultHandler {
    func serve(_ script: ScriptedAnswers, head: HTTPRequestHead, context: ChannelHandlerContext) {
        let keepAlive = head.isKeepAlive
        let answer = script.answer(method: head.method.rawValue, target: head.uri, host: head.headers.first(name: "X-Reqtop-Host"),
                                   operation: head.headers.first(name: "X-Reqtop-Operation"),
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
                var buffer = context.channel.allocator.buffer(capacity: body.count)
                buffer.writeBytes(body)
                respond(context, status: status, headers: headers, buffer: buffer, keepAlive: keepAlive)
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
