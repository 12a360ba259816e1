import Foundation

/// What each request term means, in one place: the monitor's `/` filter, breakpoints (`B`,
/// `queue.breakpoints`), fault rules (a plan's, the library's, the Hosts view's) and the
/// endpoint's commands all read `host:`, `path:`, `method:` and `header:` through these, so
/// a text picks the same requests wherever it is typed. Every comparison ignores case.
extension RequestMatch {
    /// The keys a request match knows.
    public static let keys = ["host", "path", "method", "header"]

    /// `host:TEXT`: the text is part of the request's `name:port`, the port being the one
    /// its scheme implies when the URL names none. So `host:api.example.com`, `host:40139`,
    /// `host:127.0.0.1:40139` and `host:example` each mean what they say.
    public static func host(_ text: String, matches name: String, port: Int?, scheme: String?) -> Bool {
        let implied = port ?? (scheme?.lowercased() == "https" ? 443 : 80)
        return "\(name):\(implied)".lowercased().contains(text.lowercased())
    }

    /// `path:TEXT`: starting with `/`, the path starts with it (`path:/v1/orders`); else the
    /// path holds it anywhere (`path:orders`). The query is not part of the path.
    public static func path(_ text: String, matches path: some StringProtocol) -> Bool {
        let path = (path.isEmpty ? "/" : String(path)).lowercased(), text = text.lowercased()
        return text.hasPrefix("/") ? path.hasPrefix(text) : path.contains(text)
    }

    /// `header:NAME=VALUE`: the header's value starts with VALUE; `header:NAME`: it is there.
    public static func header(name: String, value: String?, in headers: [String: String]) -> Bool {
        guard let found = headers.first(where: { $0.key.lowercased() == name.lowercased() })?.value else { return false }
        return value.map { found.lowercased().hasPrefix($0.lowercased()) } ?? true
    }

    /// The known key `key` was most likely meant to be (`stauts` → `status`), by edit
    /// distance of at most 2; nil when none is close.
    public static func suggestion(for key: String, among known: [String]) -> String? {
        let key = key.lowercased()
        return known.map { ($0, distance(key, $0)) }.filter { $0.1 <= 2 }.min { $0.1 < $1.1 }?.0
    }

    /// Levenshtein distance, with a swap of two neighbours counted as one edit.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var rows = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { rows[i][0] = i }
        for j in 0...b.count { rows[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1) }
            }
        }
        return rows[a.count][b.count]
    }
}
