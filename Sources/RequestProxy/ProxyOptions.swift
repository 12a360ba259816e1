import Foundation
import NIOSSL
import RequestOperations

/// How `reqtop proxy` listens, whom it serves and what it does with each request.
public struct ProxyOptions: Sendable {
    /// The address to listen on: loopback unless told otherwise (then only with ``credentials``).
    public var host = "127.0.0.1"
    /// 0 picks a free port (tests).
    public var port = 8080
    /// A client must send these (`Proxy-Authorization: Basic`), compared in constant time.
    public var credentials: ProxyCredentials?
    /// Signs the leaves of intercepted HTTPS; nil: every `CONNECT` is tunnelled undecrypted.
    public var authority: LocalCertificateAuthority?
    /// Hosts whose `CONNECT` is tunnelled undecrypted even with an ``authority`` (clients that
    /// pin certificates): `example.com` or `*.example.com`.
    public var tunnelHosts: [String] = []
    /// Connections open at once; one more is closed at once. `reqtop proxy` lowers it to what
    /// the descriptor limit carries (``DescriptorLimit``), after raising that to the hard limit.
    public var maxConnections = 1024
    /// A client connection with no request under way is closed after this long.
    public var idleTimeout: TimeInterval = 120
    /// A request's head must be whole this long after its first byte (or the connection's
    /// start), or the connection is closed: a client sending a byte a minute holds no slot.
    public var requestHeadTimeout: TimeInterval = 30
    /// A request body that sends nothing for this long, while the proxy reads it, closes its
    /// connection (its operation is cancelled by the client).
    public var requestBodyTimeout: TimeInterval = 30
    /// HTTP/2 to clients: offered by ALPN on decrypted connections (`h2`, then `http/1.1`)
    /// and read after `CONNECT` when a client sends its preface in plain text (prior
    /// knowledge, as gRPC without TLS does). False (`--http1-only`): HTTP/1.1 only, and a
    /// plain-text preface is relayed as bytes.
    public var offersHTTP2 = true
    /// Bytes of a request body held for the upstream before the proxy stops reading the client.
    public var uploadBuffer = 1 << 20
    /// Bytes of a response body read ahead of the client (``RequestQueue/stream(for:id:options:bufferSize:)``;
    /// 4 MiB: at 1 MiB a 1 GiB download ran at 0.30 of direct curl).
    public var downloadBuffer = ResponseBodyStream.defaultCapacity
    /// How the proxy's own upstream connections (an upgrade to wss) verify the server: as the
    /// upstream transport's requests do (the CLI gives both the same `--cacert`, `--insecure`).
    public var upstreamTLS = TLSConfiguration.makeClientConfiguration()
    /// The proxy this one's own connections (tunnels, upgrades) go through with a `CONNECT`;
    /// its operations' requests go through the upstream transport's proxy, set to the same.
    public var chain: ProxyChain?
    /// Each request's operation options: by default transparent (``transparent``).
    public var operation = ProxyOptions.transparent
    /// A host's own operation options, by host name or `*.example.com` (its subdomains and
    /// itself); ``operation`` for the others.
    public var operationByHost: [String: RequestOptions] = [:]

    /// Told once per host when a client refuses the proxy's certificate for it (it does not
    /// trust the authority, or pins its server's): `reqtop proxy` says so on stderr.
    public var onClientRefusal: (@Sendable (_ host: String, _ program: String?, _ reason: String) -> Void)?

    public init() {}

    /// A proxy must never send a client's request twice behind its back: one attempt, no
    /// redirect followed (the client gets the 3xx), no deadline but the client's patience, and
    /// every answer relayed as it came (``RequestOptions/relaysEveryAnswer``): a 304 or a 404
    /// streams to the client like a 200 and its row ends `relayed`, not failed.
    public static var transparent: RequestOptions {
        var options = RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy.never, deadline: nil,
                                     earlyRetryOnHostSuccess: false, earlyRetryOnProbe: false)
        options.redirects = .none
        // A 304 or a 404 passed to the client is the upstream's answer, relayed: not a failure.
        options.relaysEveryAnswer = true
        return options
    }

    /// The operation options for a request to `host`.
    func operation(for host: String?) -> RequestOptions {
        guard !operationByHost.isEmpty, let host = host?.lowercased() else { return operation }
        if let exact = operationByHost[host] { return exact }
        let pattern = operationByHost.keys.filter { Self.matches(host, $0) }.max { $0.count < $1.count }
        return pattern.flatMap { operationByHost[$0] } ?? operation
    }

    /// Whether `host` is `pattern`, or under it when the pattern is `*.example.com`.
    static func matches(_ host: String, _ pattern: String) -> Bool {
        let pattern = pattern.lowercased()
        if pattern.hasPrefix("*.") { return host.hasSuffix(pattern.dropFirst(1)) || host == pattern.dropFirst(2) }
        return host == pattern
    }

    /// Whether `host`'s `CONNECT` is passed through undecrypted.
    func tunnels(_ host: String) -> Bool {
        guard authority != nil else { return true }
        let host = host.lowercased()
        return tunnelHosts.contains { Self.matches(host, $0) }
    }

    /// Whether the proxy is reachable from other machines.
    public var isLoopback: Bool { HostAddress.isLoopback(host) }
}

/// The user name and password a client must present to use the proxy.
public struct ProxyCredentials: Sendable {
    /// The `Proxy-Authorization` value that matches, as bytes.
    let expected: [UInt8]

    /// `text` is `user:password`.
    public init?(_ text: String) {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return nil }
        expected = Array(("Basic " + Data(text.utf8).base64EncodedString()).utf8)
    }

    /// Whether `header` matches, in time that depends on its length only.
    func accepts(_ header: String?) -> Bool {
        let given = Array((header ?? "").utf8)
        var difference = UInt8(given.count == expected.count ? 0 : 1)
        for index in 0..<expected.count {
            difference |= expected[index] ^ (index < given.count ? given[index] : 0)
        }
        return difference == 0
    }
}
