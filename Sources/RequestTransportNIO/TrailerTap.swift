import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHTTPTypesHTTP1
import RequestOperations
import Synchronization

/// Trailers both ways, which AsyncHTTPClient's delegate API does not carry: its `RequestBag`
/// drops an answer's trailers, and a streamed body cannot end with any. This handler sits
/// between the client's HTTP codec and its request handler, on each HTTP/1.1 connection and
/// each HTTP/2 stream (through the client's debug initializers, as ``ResponseStatusGuard``
/// does). A request that wants trailers carries a tag field naming its task (``tag``), which
/// the tap takes out before the head is written; the answer's trailers are then handed to
/// that task's exchange before the client sees the end, and the request's own (a proxy's
/// client's, known once its body ended) go out with its end.
final class TrailerTap: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// The field a tagged request carries to the tap, never to the network.
    static let tag = "x-reqtop-trailers-for"

    private let registry: TrailerRegistry
    /// The tagged task whose request this channel carries now.
    private var current: Int?

    init(registry: TrailerRegistry) {
        self.registry = registry
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            guard let tag = head.headers.first(name: Self.tag) else {
                current = nil
                return context.write(data, promise: promise)
            }
            head.headers.remove(name: Self.tag)
            current = Int(tag)
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end(nil):
            guard let current, let trailers = registry.exchange(current)?.requestTrailers, !trailers.isEmpty else {
                return context.write(data, promise: promise)
            }
            context.write(wrapOutboundOut(.end(trailers)), promise: promise)
        case .body, .end:
            context.write(data, promise: promise)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .end(let trailers?) = unwrapInboundIn(data), !trailers.isEmpty, let current {
            registry.exchange(current)?.receivedTrailers(HTTPFields(trailers, splitCookie: false))
        }
        context.fireChannelRead(data)
    }

    /// After the response decoder of an AsyncHTTPClient HTTP/1.1 connection (and its guard).
    static func install(on channel: Channel, registry: TrailerRegistry) -> EventLoopFuture<Void> {
        channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            let guardHandler = try pipeline.handler(type: ResponseStatusGuard.self)
            try pipeline.addHandler(TrailerTap(registry: registry), position: .after(guardHandler))
        }
    }

    /// After the HTTP/2-to-HTTP/1 codec of an AsyncHTTPClient HTTP/2 stream (and its guard).
    static func install(onStream channel: Channel, registry: TrailerRegistry) -> EventLoopFuture<Void> {
        install(on: channel, registry: registry)
    }
}

/// The exchanges whose requests are tagged for a ``TrailerTap``, by task: registered when such
/// a request is sent, forgotten when its exchange completes.
final class TrailerRegistry: Sendable {
    private let exchanges = Mutex<[Int: NIOExchange]>([:])

    func register(_ exchange: NIOExchange) {
        exchanges.withLock { $0[exchange.identifier] = exchange }
    }

    func forget(_ identifier: Int) {
        _ = exchanges.withLock { $0.removeValue(forKey: identifier) }
    }

    func exchange(_ identifier: Int) -> NIOExchange? {
        exchanges.withLock { $0[identifier] }
    }
}
