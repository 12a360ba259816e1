import NIOCore

/// What a glued pair tells about the bytes it passes (`reqtop proxy`'s tunnel rows).
/// Called on the channels' event loop.
public protocol GlueMeter: AnyObject {
    /// Bytes read on the first side of the pair (a tunnel's client), written to the second.
    func countUp(_ bytes: Int)
    /// Bytes read on the second side, written to the first.
    func countDown(_ bytes: Int)
    /// The pair closed, after an error or not.
    func close(_ error: Error?)
    /// What passed, to be read (never kept or changed: it is written on as it came). By
    /// default, its size counted up or down.
    func passed(_ bytes: ByteBuffer, fromFirstSide: Bool)
}

extension GlueMeter {
    public func passed(_ bytes: ByteBuffer, fromFirstSide: Bool) {
        if fromFirstSide { countUp(bytes.readableBytes) } else { countDown(bytes.readableBytes) }
    }
}

/// One end of a pair of glued channels: what one channel reads is written to the other, and a
/// side that cannot take more stops the other from reading (back-pressure across the pair).
/// Closing either side closes both. After SwiftNIO's own connect-proxy example. Used by
/// `reqtop proxy`'s tunnels and by the monitor endpoint's TLS connections (TLS on one side, a
/// socket pair into the endpoint on the other). Both channels must be on one event loop.
public final class GlueHandler: ChannelDuplexHandler, RemovableChannelHandler {
    /// Bytes: a tunnel's channels carry nothing else (a TLS handler's output is bytes too).
    public typealias InboundIn = ByteBuffer
    public typealias OutboundIn = NIOAny
    public typealias OutboundOut = NIOAny

    private var partner: GlueHandler?
    private var context: ChannelHandlerContext?
    private var pendingRead = false
    /// Counts what passes: the first side counts up, the other down.
    private let meter: GlueMeter?
    private let isClientSide: Bool

    private init(meter: GlueMeter?, isClientSide: Bool) {
        self.meter = meter
        self.isClientSide = isClientSide
    }

    /// The first side (a tunnel's client) first.
    public static func matchedPair(meter: GlueMeter? = nil) -> (GlueHandler, GlueHandler) {
        let first = GlueHandler(meter: meter, isClientSide: true), second = GlueHandler(meter: meter, isClientSide: false)
        first.partner = second
        second.partner = first
        return (first, second)
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
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

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        meter?.passed(unwrapInboundIn(data), fromFirstSide: isClientSide)
        partner?.partnerWrite(data)
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        partner?.partnerFlush()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        meter?.close(nil)
        partner?.partnerCloseFull()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, case .inputClosed = event {
            partner?.partnerWriteEOF()
        }
    }

    public func errorCaught(context: ChannelHandlerContext, error: Error) {
        meter?.close(error)
        partner?.partnerCloseFull()
        context.close(promise: nil)
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner?.partnerBecameWritable() }
    }

    public func read(context: ChannelHandlerContext) {
        if partnerWritable {
            context.read()
        } else {
            pendingRead = true
        }
    }
}
