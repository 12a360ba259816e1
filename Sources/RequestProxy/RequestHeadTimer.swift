import NIOCore

/// Closes a connection whose client takes too long to send a request's head: from the
/// connection's start, and from the first byte of each later request, the head must be whole
/// within ``ProxyOptions/requestHeadTimeout``. A client that sends a header a byte a minute
/// (slowloris) would otherwise hold one of the proxy's connections for as long as it liked,
/// and a thousand of them every connection. Before the HTTP decoder: it sees bytes.
///
/// A request's body is watched too: once its head came, the body must make progress, a byte
/// at least every ``ProxyOptions/requestBodyTimeout`` — while the proxy reads (a client held
/// back because the upstream is slow is not stalled). A body that stopped half way held its
/// connection and its operation forever.
final class RequestHeadTimer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    private let bodyTimeout: TimeAmount
    /// Waiting for a head: the timer starts with the first byte (or at once, at the start).
    private var watching = true
    private var deadline: HandlerTimer?
    /// Waiting for the rest of a body: when its last byte came.
    private var bodyProgress: NIODeadline?
    private var bodyDeadline: HandlerTimer?
    private var context: ChannelHandlerContext?

    init(timeout: TimeAmount, bodyTimeout: TimeAmount) {
        self.timeout = timeout
        self.bodyTimeout = bodyTimeout
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
        bodyDeadline?.cancel()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if watching, deadline == nil { start(context) }
        if bodyProgress != nil { bodyProgress = .now() }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        bodyDeadline?.cancel()
        context.fireChannelInactive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard deadline == nil else { return }
        deadline = context.schedule(at: .now() + timeout) { context in context.channel.close(promise: nil) }
    }

    /// A request's head came whole: no deadline until the next request begins.
    func headArrived() {
        deadline?.cancel()
        (deadline, watching) = (nil, false)
    }

    /// The request's head came and its body is still to come: it must keep coming.
    func bodyBegan() {
        guard let context, bodyProgress == nil else { return }
        bodyProgress = .now()
        scheduleBodyCheck(context, at: .now() + bodyTimeout)
    }

    private func scheduleBodyCheck(_ context: ChannelHandlerContext, at when: NIODeadline) {
        bodyDeadline = context.schedule(at: when) { [self] context in checkBody(context) }
    }

    private func checkBody(_ context: ChannelHandlerContext) {
        guard let progress = bodyProgress else { return }
        let due = progress + bodyTimeout
        // Held back by the proxy (the upstream is slow), the client is not stalled.
        let reading = (try? context.channel.syncOptions?.getOption(ChannelOptions.autoRead)) ?? true
        if !reading { bodyProgress = .now() }
        if reading, due <= .now() {
            bodyProgress = nil
            context.close(promise: nil)
        } else {
            scheduleBodyCheck(context, at: max(due, .now() + .milliseconds(1)))
        }
    }

    /// The request ended: the next one's first byte starts the timer again.
    func requestEnded() {
        watching = true
        bodyProgress = nil
        bodyDeadline?.cancel()
        bodyDeadline = nil
    }
}
