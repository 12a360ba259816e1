import NIOCore
import NIOHTTP2

/// Makes a bodiless answer one HEADERS frame that ends the stream, as the server sent it.
/// `HTTP2FramePayloadToHTTP1ServerCodec` writes a head as HEADERS and the end as an empty
/// DATA frame that ends the stream; a gRPC "trailers-only" answer (a failing call: `:status`,
/// `grpc-status` and `grpc-message` in one HEADERS) then reached the client as headers with
/// no trailers, and grpcio reported `UNKNOWN: Stream removed` in place of the call's status.
/// Held until the next write or flush: an empty end right after it is folded into it. Put it
/// on each HTTP/2 stream, before that codec (the proxy's streams, the fault server's).
public final class HeadersEndCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    public typealias OutboundIn = HTTP2Frame.FramePayload
    public typealias OutboundOut = HTTP2Frame.FramePayload

    public init() {}

    private var held: (HTTP2Frame.FramePayload.Headers, EventLoopPromise<Void>?)?

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let payload = unwrapOutboundIn(data)
        if let (headers, heldPromise) = held {
            held = nil
            if case .data(let data) = payload, data.endStream, case .byteBuffer(let bytes) = data.data, bytes.readableBytes == 0 {
                var ending = headers
                ending.endStream = true
                heldPromise?.futureResult.cascade(to: promise)
                return context.write(wrapOutboundOut(.headers(ending)), promise: heldPromise ?? promise)
            }
            context.write(wrapOutboundOut(.headers(headers)), promise: heldPromise)
        }
        if case .headers(let headers) = payload, !headers.endStream {
            held = (headers, promise)
            return
        }
        context.write(data, promise: promise)
    }

    public func flush(context: ChannelHandlerContext) {
        if let (headers, promise) = held {
            held = nil
            context.write(wrapOutboundOut(.headers(headers)), promise: promise)
        }
        context.flush()
    }
}
