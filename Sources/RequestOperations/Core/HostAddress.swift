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
        // Bytes in place, the URL's host read once and not decoded: the proxy asks this of
        // every request it relays (#58).
        guard var host = url.host(percentEncoded: true) else { return false }
        let ownPort = defaultPort(of: url)
        let port = url.port ?? ownPort
        var value = value
        return value.withUTF8 { sent in host.withUTF8 { host in names(sent, host: host, port: port, ownPort: ownPort) } }
    }

    private static func names(_ sent: UnsafeBufferPointer<UInt8>, host: UnsafeBufferPointer<UInt8>, port: Int?, ownPort: Int?) -> Bool {
        let colon = UInt8(ascii: ":")
        var start = 0, end = sent.count
        while start < end, sent[start] == UInt8(ascii: " ") || sent[start] == UInt8(ascii: "\t") { start += 1 }
        while end > start, sent[end - 1] == UInt8(ascii: " ") || sent[end - 1] == UInt8(ascii: "\t") { end -= 1 }
        var (hostStart, hostEnd, portStart) = (start, end, Int?.none)
        if start < end, sent[start] == UInt8(ascii: "[") {
            guard let close = (start..<end).first(where: { sent[$0] == UInt8(ascii: "]") }) else { return false }
            (hostStart, hostEnd) = (start + 1, close)
            if close + 1 < end {
                guard sent[close + 1] == colon else { return false }
                portStart = close + 2
            }
        } else if let at = (start..<end).last(where: { sent[$0] == colon }) {
            (hostEnd, portStart) = (at, at + 1)
        }
        var (urlStart, urlEnd) = (0, host.count)
        if urlEnd >= 2, host[0] == UInt8(ascii: "["), host[urlEnd - 1] == UInt8(ascii: "]") { (urlStart, urlEnd) = (1, urlEnd - 1) }
        guard hostEnd - hostStart == urlEnd - urlStart else { return false }
        for offset in 0..<(hostEnd - hostStart) where lowerASCII(sent[hostStart + offset]) != lowerASCII(host[urlStart + offset]) {
            return false
        }
        guard let portStart else { return ownPort != nil && ownPort == port }
        guard portStart < end, end - portStart <= 5 else { return false }
        var named = 0
        for index in portStart..<end {
            let digit = sent[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return false }
            named = named * 10 + Int(digit)
        }
        return named == port
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
        defaultPort(scheme: url.scheme)
    }

    /// The port a URL of `scheme` means when it names none: 443 for https (and wss), 80 for
    /// http (and ws), nil for any other scheme.
    public static func defaultPort(scheme: String?) -> Int? {
        switch scheme?.lowercased() {
        case "https", "wss": 443
        case "http", "ws": 80
        default: nil
        }
    }
}
