import Foundation
import NIOHTTP1
import RequestOperations

/// The client's `Host` field on its way upstream. A proxy must send the host its request's
/// target names, whatever the `Host` said (RFC 9112 §3.2.2); this one keeps the field where
/// the client put it and as it spelt it, with the client's own value when that names the
/// target (`HOST: Example.com:80` for `http://example.com/`), the target's in its place when it
/// names another (a tunnel's request naming a host other than the `CONNECT`'s, a fronted
/// domain). A request without one gets the target's from the upstream client, after the rest.
enum HostField {
    /// Whether `name` is `Host` in any case: by length first, as most names are not.
    @inline(__always)
    static func isHost(_ name: String) -> Bool {
        // `b | 0x20` is `h` only for `H` and `h` (and so for each letter): no lower-cased copy.
        let utf8 = name.utf8
        guard utf8.count == 4, let first = utf8.first, first | 0x20 == UInt8(ascii: "h") else { return false }
        return utf8.elementsEqual("host".utf8) { $0 | 0x20 == $1 }
    }

    /// The value a `Host` field the client `sent` goes on with to `url`: its own when it names
    /// the target, the target's otherwise.
    static func value(_ sent: String, for url: URL) -> String {
        HostAddress.names(sent, url: url) ? sent : HostAddress.hostField(for: url)
    }

    /// More than one `Host` field: a server must refuse it (RFC 9112 §3.2), and a proxy passing
    /// one on would leave the upstream to pick either — the one a filter in front did not read.
    static func isRepeated(in headers: HTTPHeaders) -> Bool {
        var seen = false
        for field in headers where isHost(field.name) {
            if seen { return true }
            seen = true
        }
        return false
    }
}
