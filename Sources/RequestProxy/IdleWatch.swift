import NIOCore

/// Tells the pipeline when a connection has neither read nor written for `timeout`, with
/// NIO's own event (`IdleStateHandler.IdleStateEvent.all`), again every `timeout` it stays so.
///
/// What `IdleStateHandler(allTimeout:)` does, without its cost on the request path: it
/// makes a promise for every write to learn when the write completes (and chains a callback
/// on it) — a promise, a future and a callback for each answer relayed (#58). Here a write
/// counts when it is made: what the proxy does with the event only needs to know that
/// nothing has happened for a long while (it closes a connection with no exchange under way,
/// ``ProxyConnectionHandler``, or an HTTP/2 connection with no stream open, ``ProxyHTTP2``).
/// One timer a connection, re-armed only when it fires; times are the loop's (`EventLoop.now`).
final class IdleWatch: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias InboundOut = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    let timeout: TimeAmount
    private var lastActivity = NIODeadline.uptimeNanoseconds(0)
    private var timer: HandlerTimer?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive {
            lastActivity = context.eventLoop.now
            arm(context, at: lastActivity + timeout)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        lastActivity = context.eventLoop.now
        if timer == nil { arm(context, at: lastActivity + timeout) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastActivity = context.eventLoop.now
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        lastActivity = context.eventLoop.now
        context.write(data, promise: promise)
    }

    private func arm(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        timer = context.schedule(at: deadline) { [self] context in fired(context) }
    }

    private func fired(_ context: ChannelHandlerContext) {
        timer = nil
        guard context.channel.isActive else { return }
        let quietSince = lastActivity
        let now = context.eventLoop.now
        if now - quietSince >= timeout {
            arm(context, at: now + timeout)
            context.fireUserInboundEventTriggered(IdleStateHandler.IdleStateEvent.all)
        } else {
            arm(context, at: quietSince + timeout)
        }
    }
}
