import NIOCore

/// `TCP_NODELAY`, spelt once. It is an `IPPROTO_TCP` option: `.socketOption(.tcp_nodelay)`
/// names `SOL_SOCKET`'s option 1, `SO_DEBUG`, which needs `CAP_NET_ADMIN` — it failed every
/// accepted connection for every user but root (the proxy's and the fault server's both).
public enum NoDelay {
    /// Small writes go at once (a request's head, an answer's end), not after Nagle's wait.
    public static let option: ChannelOptions.Types.SocketOption = .tcpOption(.tcp_nodelay)
}
