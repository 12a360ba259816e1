import ChannelGlue
import NIOCore
import NIOPosix
import NIOSSL

/// What an intercepted `CONNECT` carries, told by its first bytes once the client was told
/// `200`: TLS (a handshake record, `0x16`) is ended here and its requests run as operations;
/// plain HTTP/1 (a request line: `GET /chat HTTP/1.1`, as a browser sends a `ws://` through a
/// proxy, or `curl -p`) is read as decrypted text is, each request an operation; HTTP/2's
/// `PRI *` preface (prior knowledge, as gRPC without TLS sends it) is read as HTTP/2, each
/// stream an operation (``ProxyHTTP2``); anything else — SSH, a database's protocol — is
/// relayed as bytes to the host the client asked for, a tunnel row like a `--tunnel` host's.
/// (mitmproxy looks the same way.)
///
/// The bytes read while deciding (and while the upstream connects) are handed on, in order,
/// to whatever comes next.
final class ConnectSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// The first byte of a TLS handshake record.
    static let tlsHandshake: UInt8 = 0x16

    private let intercept: (Channel) throws -> Void
    private let plainHTTP: (Channel) throws -> Void
    /// Nil: HTTP/2's preface is relayed as bytes (``ProxyOptions/offersHTTP2`` off).
    private let plainHTTP2: ((Channel) throws -> Void)?
    private let relay: (Channel, _ joined: @escaping @Sendable (Bool) -> Void) -> Void
    private var held: [ByteBuffer] = []
    private var decided = false

    /// - Parameters:
    ///   - intercept: adds the TLS and HTTP handlers (after this one).
    ///   - plainHTTP: adds the HTTP handlers (after this one).
    ///   - plainHTTP2: adds the HTTP/2 handlers (after this one).
    ///   - relay: connects to the upstream and adds the relay's handler (after this one); tells
    ///     `joined` whether it could.
    init(intercept: @escaping (Channel) throws -> Void, plainHTTP: @escaping (Channel) throws -> Void,
         plainHTTP2: ((Channel) throws -> Void)? = nil,
         relay: @escaping (Channel, _ joined: @escaping @Sendable (Bool) -> Void) -> Void) {
        self.intercept = intercept
        self.plainHTTP = plainHTTP
        self.plainHTTP2 = plainHTTP2
        self.relay = relay
    }

    /// What the first bytes are.
    enum Carried: Equatable {
        case tls, http, http2, other
    }

    /// What `bytes` (the first read so far) begin: nil while too few to tell (a method's
    /// letters with no space after them yet).
    static func carried(by bytes: [UInt8]) -> Carried? {
        guard let first = bytes.first else { return nil }
        if first == tlsHandshake { return .tls }
        // HTTP/2's preface, whole (a prefix of it: not yet told).
        let preface = ProxyHTTP2.preface
        if bytes.starts(with: preface.prefix(min(bytes.count, preface.count))) {
            return bytes.count >= preface.count ? .http2 : nil
        }
        // A request line: a method token of capitals, a space, then a target that is not `*`.
        let method = bytes.prefix { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
        guard !method.isEmpty else { return .other }
        guard method.count < bytes.count else { return method.count < 16 ? nil : .other }
        guard method.count < 16, bytes[method.count] == UInt8(ascii: " ") else { return .other }
        guard bytes.count > method.count + 1 else { return nil }
        return bytes[method.count + 1] == UInt8(ascii: "*") ? .other : .http
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        held.append(bytes)
        guard !decided else { return }
        let start = held.reduce(into: [UInt8]()) { start, part in
            guard start.count < ProxyHTTP2.preface.count else { return }
            start += part.getBytes(at: part.readerIndex, length: min(part.readableBytes, ProxyHTTP2.preface.count - start.count)) ?? []
        }
        guard var carried = Self.carried(by: start) else { return }
        decided = true
        if carried == .http2, plainHTTP2 == nil { carried = .other }
        if carried != .other {
            do {
                switch carried {
                case .tls: try intercept(context.channel)
                case .http: try plainHTTP(context.channel)
                case .http2: try plainHTTP2?(context.channel)
                case .other: break
                }
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
