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
