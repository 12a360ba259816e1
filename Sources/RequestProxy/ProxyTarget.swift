import Foundation
import RequestOperations

/// Where a client's request is to go, read from its request line: an absolute-form URL for a
/// plain proxied request, an authority (`host:port`) for `CONNECT`, or a path when the request
/// came inside an intercepted tunnel, whose host the tunnel named.
enum ProxyTarget: Equatable {
    /// The URL, with its host and port (the scheme's when it names none) read out once: each
    /// read of `URL.host` decodes it again (~1,100 instructions), and the request's handling
    /// asked it four times (#58).
    case url(URL, host: String, port: Int)
    case connect(host: String, port: Int)

    /// What is wrong with a request target, for the 400 the client gets.
    struct Problem: Error, Equatable {
        let message: String
    }

    /// Reads `target` of a request with `method`; `origin` is the scheme and authority of the
    /// intercepted tunnel the request came through (nil on the proxy's own port).
    static func parse(method: String, target: String, origin: URL?) -> Result<ProxyTarget, Problem> {
        if method == "CONNECT" {
            guard origin == nil else { return .failure(Problem(message: "CONNECT inside a tunnel is not supported")) }
            guard let (host, port) = authority(target) else {
                return .failure(Problem(message: "CONNECT needs host:port, not \"\(target.prefix(200))\""))
            }
            return .success(.connect(host: host, port: port))
        }
        if target.hasPrefix("/"), let origin {
            guard let url = URL(string: origin.absoluteString + target), let host = url.host else {
                return .failure(Problem(message: "the request target \"\(target.prefix(200))\" is not a valid path"))
            }
            return .success(.url(url, host: host, port: url.port ?? defaultPort(of: url.scheme)))
        }
        // Parsed once (a parse is ~3,500 instructions; it was made twice, #58).
        let url = URL(string: target)
        let scheme = url?.scheme?.lowercased()
        // Nothing a client sends may choose a local resource: only the two web schemes.
        if let scheme, scheme != "http", scheme != "https" {
            return .failure(Problem(message: "only http and https URLs are proxied, not \(scheme.prefix(20)):"))
        }
        guard let url, let scheme, let host = url.host, !host.isEmpty else {
            let hint = target.hasPrefix("/") ? "; this is a proxy: send the whole URL (absolute form), as a client configured with a proxy does" : ""
            return .failure(Problem(message: "the request target \"\(target.prefix(200))\" is not an absolute http URL\(hint)"))
        }
        let port = url.port
        if let port, !(1...65535).contains(port) {
            return .failure(Problem(message: "port \(port) is not between 1 and 65535"))
        }
        guard url.user == nil, url.password == nil else {
            return .failure(Problem(message: "credentials in the URL are not forwarded; send them in a header"))
        }
        return .success(.url(url, host: host, port: port ?? defaultPort(of: scheme)))
    }

    /// 443 for https, 80 for http: the only two schemes a target may have (a tunnel's origin
    /// is one of them too).
    private static func defaultPort(of scheme: String?) -> Int {
        HostAddress.defaultPort(scheme: scheme) ?? 80
    }

    /// `host:port` (`[v6]:port` for an IPv6 address), or nil.
    static func authority(_ text: String) -> (String, Int)? {
        var host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        // No whitespace or control byte: the host is written into a request line again (a
        // chained proxy's CONNECT) and must not end it or start a header there.
        guard !host.isEmpty, !host.unicodeScalars.contains(where: { $0 == "/" || $0 == "@" || $0.value <= 0x20 || $0.value == 0x7F }),
              let port = Int(portText), (1...65535).contains(port) else { return nil }
        host = Substring(host.lowercased())
        return (String(host), port)
    }
}
