import ChannelGlue
import NIOCore

/// The socket options of a client's connection, set as it is accepted.
///
/// Set here, in the child's initializer (which runs on the connection's event loop, before it
/// is registered), rather than as the bootstrap's `childChannelOption`s: NIO applies those one
/// after another through a future each (a promise, a `map` and a `cascadeFailure` an option,
/// and one for the lot) — ~13 futures and ~20,000 instructions for every connection, a
/// thirtieth of a proxied request whose client opens a connection for it (#58).
enum ClientConnectionOptions {
    static func apply(to channel: Channel) throws {
        guard let options = channel.syncOptions else { return }
        // No `TCP_NODELAY` here: the listening socket has it (``ProxyServer``), and an accepted
        // socket takes it from there (Linux and the BSDs); set again, NIO asks the socket its
        // own address first, a `getsockname` and an `inet_ntop` a connection (#58).
        // Reads of up to 1 MiB (NIO's default stops at 64 KiB): a 1 GiB upload through the
        // proxy took 0.82-1.09 s against 1.09-1.65 s, alternated in one run. One read a
        // wake-up: a connection keeps a buffer for each read a wake-up may make (four by
        // default), and an upload's grow to 1 MiB.
        try options.setOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 1 << 20))
        try options.setOption(.maxMessagesPerRead, value: 1)
    }
}
