import NIOCore
import NIOHTTP1
import NIOHTTP2

/// Refuses a response whose status is below 100 before AsyncHTTPClient sees it.
///
/// AsyncHTTPClient 1.37.0 takes every head below 200 for an informational one and ignores it
/// (`HTTPRequestStateMachine.receivedHTTPResponseHead`); the body or end that follows then
/// finds no head and traps ("How can we receive a response body, if we haven't received a
/// head"), so `HTTP/1.1 000 X` from any server killed the process. llhttp accepts any three
/// digits, and only 1xx heads are informational, so a head below 100 is a broken response:
/// this handler, put between the response decoder and the client's handler of each HTTP/1.1
/// connection (through `http1_1ConnectionDebugInitializer`), fails the request with
/// ``InvalidResponseStatus`` (reported as -1011, bad server response), drops the rest of
/// that response and closes the connection.
///
/// The upstream fix is one line in `receivedHTTPResponseHead`: treat `code < 100` as an
/// error (`.failRequest(HTTPClientError.invalidResponseStatus…)`) instead of `.wait`.
final class ResponseStatusGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart

    /// A head below 100 was refused: what follows on this connection is dropped.
    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if refused { return }
        if case .head(let head) = unwrapInboundIn(data), head.status.code < 100 {
            refused = true
            context.fireErrorCaught(InvalidResponseStatus(code: Int(head.status.code)))
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    /// Puts a guard after the HTTP/2-to-HTTP/1 codec of an AsyncHTTPClient HTTP/2 stream (a
    /// `:status` below 100 reaches the same state machine).
    static func install(onStream channel: Channel) -> EventLoopFuture<Void> {
        channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            let codec = try pipeline.handler(type: HTTP2FramePayloadToHTTP1ClientCodec.self)
            try pipeline.addHandler(ResponseStatusGuard(), position: .after(codec))
        }
    }

    /// Puts a guard after the response decoder of an AsyncHTTPClient HTTP/1.1 connection.
    static func install(on channel: Channel) -> EventLoopFuture<Void> {
        channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPResponseDecoder>.self)
            try pipeline.addHandler(ResponseStatusGuard(), position: .after(decoder))
        }
    }
}

/// A response status no HTTP version defines (below 100).
public struct InvalidResponseStatus: Error, CustomStringConvertible {
    public let code: Int

    public var description: String { "invalid response status \(code) (below 100)" }
}
