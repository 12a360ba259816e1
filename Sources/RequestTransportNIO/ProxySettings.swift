import Foundation

/// Which HTTP proxy a request goes through, read as curl (and so URLSession on Linux, which
/// is libcurl) reads it, so the same command goes the same way on either transport:
///
/// - `http_proxy` for `http://` URLs — lower case only: `HTTP_PROXY` may be set by a web
///   server from a request's `Proxy:` header (httpoxy), so curl ignores it and so do we;
/// - `HTTPS_PROXY` or `https_proxy` for `https://` URLs (through `CONNECT`);
/// - `ALL_PROXY` or `all_proxy` for either when the one above is not set;
/// - `NO_PROXY` or `no_proxy`: hosts that go direct, comma-separated — `*` for all, a name
///   matches itself and its subdomains (`example.com`, `.example.com`), an address itself.
///
/// Only `http://` proxies are taken (AsyncHTTPClient's HTTP proxy); a proxy's `user:password`
/// becomes its Basic `Proxy-Authorization`.
public struct ProxySettings: Sendable, Equatable {
    public var http: URL?
    public var https: URL?
    public var noProxy: [String]

    public init(http: URL? = nil, https: URL? = nil, noProxy: [String] = []) {
        self.http = http
        self.https = https
        self.noProxy = noProxy
    }

    /// No proxy for anything.
    public static let none = ProxySettings()

    /// One proxy for both schemes (`--proxy URL`), with `noProxy` as given.
    public static func single(_ proxy: URL, noProxy: [String] = []) -> ProxySettings {
        ProxySettings(http: proxy, https: proxy, noProxy: noProxy)
    }

    /// The process's environment, read with curl's rules. A value that is not an `http://`
    /// URL is left out (``problems(in:)`` names it).
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> ProxySettings {
        func value(_ names: String...) -> URL? {
            for name in names {
                if let text = environment[name], !text.isEmpty { return proxyURL(text) }
            }
            return nil
        }
        let all = value("ALL_PROXY", "all_proxy")
        return ProxySettings(http: value("http_proxy") ?? all, https: value("HTTPS_PROXY", "https_proxy") ?? all,
                             noProxy: noProxyList(environment["NO_PROXY"] ?? environment["no_proxy"] ?? ""))
    }

    /// `NO_PROXY`'s entries, trimmed, lower case, without a leading dot or a port.
    public static func noProxyList(_ text: String) -> [String] {
        text.split(separator: ",").map { entry in
            var host = entry.trimmingCharacters(in: .whitespaces).lowercased()
            if host.hasPrefix(".") { host.removeFirst() }
            if !host.hasPrefix("["), let colon = host.lastIndex(of: ":"), host[host.index(after: colon)...].allSatisfy(\.isNumber) {
                host = String(host[..<colon])
            }
            return host
        }.filter { !$0.isEmpty }
    }

    /// A proxy given as text, as curl takes it: `host:port` means `http://host:port`.
    /// Nil when it is not an `http://` URL with a host.
    public static func proxyURL(_ text: String) -> URL? {
        let full = text.contains("://") ? text : "http://" + text
        guard let url = URL(string: full), url.scheme?.lowercased() == "http", let host = url.host, !host.isEmpty else { return nil }
        return url
    }

    /// The proxy for `url`, or nil to go direct.
    public func proxy(for url: URL) -> URL? {
        guard let host = url.host?.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]")) else { return nil }
        let proxy = url.scheme?.lowercased() == "https" ? https : http
        guard let proxy else { return nil }
        for entry in noProxy where entry == "*" || host == entry || host.hasSuffix("." + entry) { return nil }
        return proxy
    }

    /// What in `environment` looks like a proxy setting reqtop cannot use, in words.
    public static func problems(in environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        ["http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"].compactMap { name in
            guard let text = environment[name], !text.isEmpty, proxyURL(text) == nil else { return nil }
            return "\(name) is not an http:// proxy URL; it is ignored"
        }
    }
}
