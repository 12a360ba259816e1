/// The header fields that belong to one connection and not to the message (RFC 9110 §7.6.1):
/// what a proxy drops in both directions and a server serving a recorded answer leaves out,
/// since on another connection they would say what is not so. Each side frames the message
/// itself.
public enum ConnectionFields {
    /// Always the connection's, named by a `Connection` field or not, lower-cased.
    /// `Proxy-Connection` is not in the RFC; clients still send it, meaning `Connection`.
    /// `Proxy-Authorization` and `Proxy-Authenticate` are for the next proxy only (§11.7).
    public static let names: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
        "te", "trailer", "transfer-encoding", "upgrade",
    ]

    /// The names `fields`' `Connection` (or `Proxy-Connection`) fields make the connection's
    /// too (`Connection: close, X-Hop`), lower-cased.
    public static func namedByConnection(in fields: some Sequence<(String, String)>) -> Set<String> {
        var named: Set<String> = []
        for (name, value) in fields where isConnection(name) {
            for token in value.split(separator: ",") {
                let trimmed = token.trimmingWhitespace.lowercased()
                if !trimmed.isEmpty { named.insert(trimmed) }
            }
        }
        return named
    }

    /// Every name that is the connection's in `fields`: ``names`` and those its `Connection` names.
    public static func all(in fields: some Sequence<(String, String)>) -> Set<String> {
        names.union(namedByConnection(in: fields))
    }

    /// False when `name` cannot be one of ``names``, told from its length and first byte
    /// alone: most fields of a head are not, and are passed without being lower-cased (a
    /// Unicode case mapping a field, ten and more a proxied request, #58).
    public static func mayBeAlwaysTheConnections(_ name: String) -> Bool {
        switch name.utf8.count {
        case 2, 7, 10, 16, 17, 18, 19: return mayBegin(name.utf8.first ?? 0)
        default: return false
        }
    }

    /// `c`, `k`, `p`, `t`, `u`, either case: the first letters of ``names``.
    private static func mayBegin(_ byte: UInt8) -> Bool {
        switch byte | 0x20 {
        case UInt8(ascii: "c"), UInt8(ascii: "k"), UInt8(ascii: "p"), UInt8(ascii: "t"), UInt8(ascii: "u"): true
        default: false
        }
    }

    private static func isConnection(_ name: String) -> Bool {
        let count = name.utf8.count
        guard count == 10 || count == 16, mayBeAlwaysTheConnections(name) else { return false }
        let lower = name.lowercased()
        return lower == "connection" || lower == "proxy-connection"
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs (optional whitespace, RFC 9110 §5.6.3).
    var trimmingWhitespace: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
