import Foundation

/// A host as an address is written: an IPv6 address in brackets wherever a port or a scheme
/// goes beside it (`[::1]:8080`, `https://[::1]/`), and whether it is this machine's loopback.
/// One place for both: they were written out ten times over, and two of the loopback checks
/// disagreed on `127.0.0.1`.
public enum HostAddress {
    /// `host`, bracketed when it is an IPv6 address (it has a colon) and not bracketed yet.
    public static func bracketed(_ host: String) -> String {
        // Byte by byte: a `String` argument picks Foundation's `contains`, a `range(of:)`
        // through NSString on Linux (0.7 % of the proxy's CPU, once per request, #58).
        host.utf8.contains(UInt8(ascii: ":")) && !host.hasPrefix("[") ? "[\(host)]" : host
    }

    /// `host:port`, an IPv6 host bracketed: a `CONNECT` target, a `Host` field, a message's.
    public static func authority(_ host: String, port: Int) -> String {
        // Appended, not interpolated: interpolation went through its generic machinery for
        // the port, four times what this costs, once a request (#58).
        var authority = bracketed(host)
        authority.append(":")
        authority.append(String(port))
        return authority
    }

    /// True for 127.0.0.0/8, ::1 (bracketed or not) and `localhost`.
    public static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        return host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }
}

extension HostAddress {
    /// The `Host` field's value for `url` as a client writes it (RFC 9110 §7.2): the host,
    /// bracketed if IPv6, and the port when it is not the scheme's own.
    public static func hostField(for url: URL) -> String {
        let host = url.host ?? ""
        guard let port = url.port, port != defaultPort(of: url) else { return bracketed(host) }
        return authority(host, port: port)
    }

    /// Whether a `Host` field's `value` names `url`'s host and port (any case, the scheme's port
    /// written or not): a field the URL says already, which a copy or an edit may leave out and
    /// a proxy passes on as its client spelt it. A value naming another host is deliberate (a
    /// virtual host on an address) or, at a proxy, overruled by the request's target.
    public static func names(_ value: String, url: URL) -> Bool {
        guard let urlHost = url.host?.lowercased() else { return false }
        let text = value.trimmingCharacters(in: .whitespaces)
        var host: Substring
        var port: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return false }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return false }
                port = rest.dropFirst()
            }
        } else if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        } else {
            host = Substring(text)
        }
        let bare = urlHost.hasPrefix("[") && urlHost.hasSuffix("]") ? String(urlHost.dropFirst().dropLast()) : urlHost
        guard host.lowercased() == bare else { return false }
        let named = port.map { Int($0) } ?? defaultPort(of: url)
        return named != nil && named == (url.port ?? defaultPort(of: url))
    }

    /// `headers` without a `Host` that names `url` (``names(_:url:)``): what a copy of a
    /// request shows, where the URL says it, so an edit of the URL is not undone by it.
    public static func withoutDerivedHost(_ headers: [String: String], url: String) -> [String: String] {
        guard let parsed = URL(string: url) else { return headers }
        return headers.filter { $0.key.lowercased() != "host" || !names($0.value, url: parsed) }
    }

    private static func defaultPort(of url: URL) -> Int? {
        switch url.scheme?.lowercased() {
        case "https", "wss": 443
        case "http", "ws": 80
        default: nil
        }
    }
}
