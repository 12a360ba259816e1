import AsyncHTTPClient
import Foundation
import Synchronization

/// The NIO transport's clients: one that goes direct, and one per proxy in use (made when a
/// request first needs it). AsyncHTTPClient takes one proxy per client, for every request,
/// so `NO_PROXY` and separate http and https proxies need a client each.
final class NIOClients: Sendable {
    let direct: HTTPClient
    let proxies: ProxySettings
    private let configuration: HTTPClient.Configuration
    private let proxied = Mutex<[URL: HTTPClient]>([:])

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

    /// The client for a request to `url`.
    func client(for url: URL) -> HTTPClient {
        // No proxy at all (the usual case): no URL parsing on the request's path.
        guard usesProxies else { return direct }
        guard let proxy = proxies.proxy(for: url), let host = proxy.host else { return direct }
        return proxied.withLock { clients in
            if let client = clients[proxy] { return client }
            var configuration = configuration
            let port = proxy.port ?? 80
            if let user = proxy.user {
                let password = proxy.password ?? ""
                configuration.proxy = .server(host: host, port: port, authorization: .basic(username: user.removingPercentEncoding ?? user,
                                                                                            password: password.removingPercentEncoding ?? password))
            } else {
                configuration.proxy = .server(host: host, port: port)
            }
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            clients[proxy] = client
            return client
        }
    }

    /// The proxy a request to `url` goes through, as `host:port` (never its credentials).
    func proxyName(for url: URL) -> String? {
        guard usesProxies, let proxy = proxies.proxy(for: url), let host = proxy.host else { return nil }
        return "\(host):\(proxy.port ?? 80)"
    }

    /// Whether a request to `url` connects to its host itself (no proxy).
    func goesDirect(to url: URL) -> Bool {
        client(for: url) === direct
    }

    func shutdown() async throws {
        let all = proxied.withLock { clients in
            defer { clients = [:] }
            return Array(clients.values)
        }
        for client in all { try await client.shutdown() }
        try await direct.shutdown()
    }
}
