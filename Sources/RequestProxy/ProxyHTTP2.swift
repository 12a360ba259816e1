import Foundation
import ChannelGlue
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOTLS

/// HTTP/2 from a client, on a decrypted connection (chosen by ALPN) or in plain text with
/// prior knowledge (the `PRI *` preface after `CONNECT`, as gRPC without TLS sends it).
/// swift-nio-http2's server pipeline does framing, HPACK and flow control; each stream is
/// read as one HTTP/1 request (``HTTP2FramePayloadToHTTP1ServerCodec``) by its own
/// ``ProxyConnectionHandler``, so a stream is an exchange through the engine — one operation
/// — exactly as an HTTP/1.1 request is. Per-stream flow control is the stream channel's: a
/// stream whose client reads slowly holds back only its own upstream, and a stream's
/// `RST_STREAM` closes its channel, which cancels its operation (and a cancelled operation's
/// stream is reset).
enum ProxyHTTP2 {
    /// What the proxy offers by ALPN on a decrypted connection, best first.
    static let offered = ["h2", "http/1.1"]

    /// The connection preface an HTTP/2 client with prior knowledge sends first (RFC 9113 §3.4).
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// After the TLS handshake: `h2` when the client chose it by ALPN, HTTP/1.1 otherwise (a
    /// client that sent no ALPN at all too).
    static func negotiate(on channel: Channel, http1: @escaping (Channel) throws -> Void, http2: @escaping (Channel) throws -> Void) throws {
        let handler = ApplicationProtocolNegotiationHandler { result, channel in
            channel.eventLoop.makeCompletedFuture {
                if case .negotiated("h2") = result { try http2(channel) } else { try http1(channel) }
            }
        }
        try channel.pipeline.syncOperations.addHandler(handler)
    }

    /// The HTTP/2 server pipeline on `channel`: each stream a request to `origin`, by its own
    /// handler. A connection with no open stream is closed once idle for
    /// ``ProxyOptions/idleTimeout`` (the connection's idle timer fires into it).
    static func install(on channel: Channel, context: ProxyContext, connection: Int, origin: URL, client: ClientOrigin) throws {
        _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: .init(), streamConfiguration: .init()
        ) { stream in
            stream.eventLoop.makeCompletedFuture {
                let streamID = try stream.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID)
                try stream.pipeline.syncOperations.addHandler(HeadersEndCoalescer())
                try ProxyConnectionHandler.installStream(on: stream, streamID: streamID.map(Int.init) ?? 0, context: context,
                                                        connection: connection, origin: origin, client: client)
            }
        }
        try channel.pipeline.syncOperations.addHandler(IdleConnectionCloser())
    }

    /// The `Cookie` fields of an HTTP/2 request, which a client may send one crumb a field
    /// (RFC 9113 §8.2.3), joined with `"; "` into one, where the first stood, for an HTTP/1.1
    /// upstream (which must see one `Cookie` line).
    static func joiningCookies(_ headers: HTTPHeaders) -> HTTPHeaders {
        let crumbs = headers[canonicalForm: "cookie"]
        guard crumbs.count > 1 else { return headers }
        var joined = HTTPHeaders()
        var done = false
        for (name, value) in headers {
            guard name.lowercased() == "cookie" else {
                joined.add(name: name, value: value)
                continue
            }
            if !done { joined.add(name: name, value: crumbs.joined(separator: "; ")) }
            done = true
        }
        return joined
    }
}

/// Counts an HTTP/2 connection's open streams (swift-nio-http2 says each one's opening and
/// closing) and closes the connection when the idle timer fires with none open.
private final class IdleConnectionCloser: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    private var open = 0

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is NIOHTTP2StreamCreatedEvent: open += 1
        case is StreamClosedEvent: open = max(0, open - 1)
        case is IdleStateHandler.IdleStateEvent where open == 0:
            context.close(promise: nil)
            return
        default: break
        }
        context.fireUserInboundEventTriggered(event)
    }
}
