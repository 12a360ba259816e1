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

    private static func isConnection(_ name: String) -> Bool {
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
