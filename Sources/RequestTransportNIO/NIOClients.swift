import AsyncHTTPClient
import Foundation
import Synchronization

/// The NIO transport's clients: one that goes direct and may speak HTTP/2, made at once; and,
/// made when a request first needs one, one per proxy in use and one per way a request may go
/// that is kept to HTTP/1.1 (``RequestMessage/allowsHTTP2``). AsyncHTTPClient takes one proxy
/// and one choice of HTTP version per client, for every request, so `NO_PROXY`, separate http
/// and https proxies and requests held to HTTP/1.1 need a client each.
final class NIOClients: Sendable {
    let direct: HTTPClient
    let proxies: ProxySettings
    private let configuration: HTTPClient.Configuration
    private let others = Mutex<[Route: HTTPClient]>([:])

    /// How a client's requests go: through which proxy (nil: direct), and whether HTTP/2 is off.
    private struct Route: Hashable {
        let proxy: URL?
        let http1Only: Bool
    }

    /// Whether TLS handshakes offer a client certificate (`--cert`).
    let sendsClientCertificate: Bool
    /// Whether any request may go through a proxy.
    private let usesProxies: Bool
    /// Whether encoded answers are decoded (and `Accept-Encoding` offered when the request has
    /// none): false for `reqtop proxy`, whose client negotiated the encoding itself.
    let decodesBodies: Bool

    init(configuration: HTTPClient.Configuration, proxies: ProxySettings, decodesBodies: Bool = true) {
        self.configuration = configuration
        self.decodesBodies = decodesBodies
        self.proxies = proxies
        usesProxies = proxies.http != nil || proxies.https != nil
        sendsClientCertificate = !(configuration.tlsConfiguration?.certificateChain.isEmpty ?? true)
        direct = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// The client for a request to `url`; kept to HTTP/1.1 unless `allowsHTTP2`.
    func client(for url: URL, allowsHTTP2: Bool = true) -> HTTPClient {
        let http1Only = !allowsHTTP2 && configuration.httpVersion != .http1Only
        // No proxy and no change of version (the library's usual case): no URL parsing, no lock.
        let proxy = self.proxy(for: url)
        guard proxy != nil || http1Only else { return direct }
        let route = Route(proxy: proxy, http1Only: http1Only)
        return others.withLock { clients in
            if let client = clients[route] { return client }
            var configuration = configuration
            if http1Only { configuration.httpVersion = .http1Only }
            if let proxy, let host = proxy.host {
                let port = proxy.port ?? 80
                if let user = proxy.user {
                    let password = proxy.password ?? ""
                    configuration.proxy = .server(host: host, port: port, authorization: .basic(username: user.removingPercentEncoding ?? user,
                                                                                                password: password.removingPercentEncoding ?? password))
                } else {
                    configuration.proxy = .server(host: host, port: port)
                }
            }
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            clients[route] = client
            return client
        }
    }

    /// The proxy a request to `url` goes through (one with a host), or nil: direct.
    private func proxy(for url: URL) -> URL? {
        guard usesProxies, let proxy = proxies.proxy(for: url), proxy.host != nil else { return nil }
        return proxy
    }

    /// The proxy a request to `url` goes through, as `host:port` (never its credentials).
    func proxyName(for url: URL) -> String? {
        guard let proxy = proxy(for: url), let host = proxy.host else { return nil }
        return "\(host):\(proxy.port ?? 80)"
    }

    /// Whether a request to `url` connects to its host itself (no proxy).
    func goesDirect(to url: URL) -> Bool {
        proxy(for: url) == nil
    }

    func shutdown() async throws {
        let all = others.withLock { clients in
            defer { clients = [:] }
            return Array(clients.values)
        }
        for client in all { try await client.shutdown() }
        try await direct.shutdown()
    }
}
