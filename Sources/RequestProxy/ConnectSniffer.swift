import ChannelGlue
import NIOCore
import NIOPosix
import NIOSSL

/// What an intercepted `CONNECT` carries, told by its first byte once the client was told
/// `200`: TLS (a handshake record, `0x16`) is ended here and its requests run as operations;
/// anything else — SSH, a database's protocol, plain HTTP (`curl -p`) — is not the proxy's to
/// read, and is relayed as bytes to the host the client asked for, a tunnel row like a
/// `--tunnel` host's. (mitmproxy looks the same way.)
///
/// The bytes read while deciding (and while the upstream connects) are handed on, in order,
/// to whatever comes next.
final class ConnectSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// The first byte of a TLS handshake record.
    static let tlsHandshake: UInt8 = 0x16

    private let intercept: (Channel) throws -> Void
    private let relay: (Channel, _ joined: @escaping @Sendable (Bool) -> Void) -> Void
    private var held: [ByteBuffer] = []
    private var decided = false

    /// - Parameters:
    ///   - intercept: adds the TLS and HTTP handlers (after this one).
    ///   - relay: connects to the upstream and adds the relay's handler (after this one); tells
    ///     `joined` whether it could.
    init(intercept: @escaping (Channel) throws -> Void, relay: @escaping (Channel, _ joined: @escaping @Sendable (Bool) -> Void) -> Void) {
        self.intercept = intercept
        self.relay = relay
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        held.append(bytes)
        guard !decided, let first = bytes.getInteger(at: bytes.readerIndex, as: UInt8.self) else { return }
        decided = true
        if first == Self.tlsHandshake {
            do {
                try intercept(context.channel)
                handOn(context)
            } catch {
                context.close(promise: nil)
            }
            return
        }
        // Nothing more is read until the upstream is there to take it.
        context.channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        relay(context.channel) { joined in
            let (sniffer, context) = bound.value
            guard joined else { return context.close(promise: nil) }
            sniffer.handOn(context)
            let channel = context.channel
            channel.setOption(ChannelOptions.autoRead, value: true).whenSuccess { channel.read() }
        }
    }

    /// Gives what was read to the handlers after this one, and leaves.
    private func handOn(_ context: ChannelHandlerContext) {
        let bytes = held
        held = []
        for part in bytes { context.fireChannelRead(wrapInboundOut(part)) }
        context.fireChannelReadComplete()
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
