import NIOCore

/// A client connection's HTTP/1 handlers, by what each is: taken out when the connection
/// becomes a relay of bytes (a `CONNECT` tunnel, an upgrade). The decoder is named apart: it
/// stays until what replaces the codec is in, so bytes it read past the head go on to that.
struct ClientCodec {
    let decoder: RemovableChannelHandler
    /// Taken out at once: the head timer, the pipelining handler, the encoder, and the
    /// proxy's handler of the connection.
    let others: [RemovableChannelHandler]

    init(decoder: RemovableChannelHandler, others: [RemovableChannelHandler]) {
        self.decoder = decoder
        self.others = others
    }

    /// The same with `handler` (the connection's proxy handler, which made the codec) taken out too.
    func with(_ handler: RemovableChannelHandler) -> ClientCodec {
        ClientCodec(decoder: decoder, others: others + [handler])
    }
}
