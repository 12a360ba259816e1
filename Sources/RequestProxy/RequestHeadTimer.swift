import NIOCore

/// Closes a connection whose client takes too long to send a request's head: from the
/// connection's start, and from the first byte of each later request, the head must be whole
/// within ``ProxyOptions/requestHeadTimeout``. A client that sends a header a byte a minute
/// (slowloris) would otherwise hold one of the proxy's connections for as long as it liked,
/// and a thousand of them every connection. Before the HTTP decoder: it sees bytes.
final class RequestHeadTimer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    /// Waiting for a head: the timer starts with the first byte (or at once, at the start).
    private var watching = true
    private var deadline: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if watching, deadline == nil { start(context) }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        context.fireChannelInactive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard deadline == nil else { return }
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    /// A request's head came whole: no deadline until the next request begins.
    func headArrived() {
        deadline?.cancel()
        (deadline, watching) = (nil, false)
    }

    /// The request ended: the next one's first byte starts the timer again.
    func requestEnded() {
        watching = true
    }
}
