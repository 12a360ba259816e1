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
        // Bytes and no Foundation: the proxy asks this of every request it relays (#58).
        guard let urlHost = url.host?.utf8 else { return false }
        var text = Substring(value).utf8
        while let first = text.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { text = text.dropFirst() }
        while let last = text.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { text = text.dropLast() }
        var host = text
        var port: Substring.UTF8View?
        if text.first == UInt8(ascii: "[") {
            guard let close = text.firstIndex(of: UInt8(ascii: "]")) else { return false }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.first == UInt8(ascii: ":") else { return false }
                port = rest.dropFirst()
            }
        } else if let colon = text.lastIndex(of: UInt8(ascii: ":")) {
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        var bare = Substring(url.host ?? "").utf8
        if urlHost.first == UInt8(ascii: "["), urlHost.last == UInt8(ascii: "]") { bare = bare.dropFirst().dropLast() }
        guard host.count == bare.count, zip(host, bare).allSatisfy({ lowerASCII($0) == lowerASCII($1) }) else { return false }
        let named = port.map { Int(Substring($0)) } ?? defaultPort(of: url)
        return named != nil && named == (url.port ?? defaultPort(of: url))
    }

    @inline(__always)
    private static func lowerASCII(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
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
