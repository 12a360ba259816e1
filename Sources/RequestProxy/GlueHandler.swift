import NIOCore

/// One end of a tunnel: what one channel reads is written to the other, and a side that
/// cannot take more stops the other from reading (back-pressure across the tunnel). Closing
/// either side closes both. After SwiftNIO's own connect-proxy example.
final class GlueHandler: ChannelDuplexHandler, RemovableChannelHandler {
    /// Bytes: a tunnel's channels carry nothing else (a TLS handler's output is bytes too).
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var partner: GlueHandler?
    private var context: ChannelHandlerContext?
    private var pendingRead = false
    /// Counts what passes, for the tunnel's row: the client's side counts up, the other down.
    private let meter: TunnelMeter?
    private let isClientSide: Bool

    private init(meter: TunnelMeter?, isClientSide: Bool) {
        self.meter = meter
        self.isClientSide = isClientSide
    }

    /// The client's side first.
    static func matchedPair(meter: TunnelMeter? = nil) -> (GlueHandler, GlueHandler) {
        let first = GlueHandler(meter: meter, isClientSide: true), second = GlueHandler(meter: meter, isClientSide: false)
        first.partner = second
        second.partner = first
        return (first, second)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    // MARK: - Told by the partner (both channels are on one event loop)

    private func partnerWrite(_ data: NIOAny) {
        context?.write(data, promise: nil)
    }

    private func partnerFlush() {
        context?.flush()
    }

    private func partnerWriteEOF() {
        context?.close(mode: .output, promise: nil)
    }

    private func partnerCloseFull() {
        context?.close(promise: nil)
    }

    private func partnerBecameWritable() {
        if pendingRead {
            pendingRead = false
            context?.read()
        }
    }

    private var partnerWritable: Bool { partner?.context?.channel.isWritable ?? false }

    // MARK: - This side

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if let meter {
            let bytes = unwrapInboundIn(data).readableBytes
            if isClientSide { meter.countUp(bytes) } else { meter.countDown(bytes) }
        }
        partner?.partnerWrite(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.partnerFlush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        meter?.close(nil)
        partner?.partnerCloseFull()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, case .inputClosed = event {
            partner?.partnerWriteEOF()
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        meter?.close(error)
        partner?.partnerCloseFull()
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner?.partnerBecameWritable() }
    }

    func read(context: ChannelHandlerContext) {
        if partnerWritable {
            context.read()
        } else {
            pendingRead = true
        }
    }
}
