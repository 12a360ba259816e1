import Foundation
import RequestOperations

/// A request as a curl command line for a POSIX shell: what `y` in the monitor copies and
/// `reqtop export REC --curl ID` prints. Every word is single-quoted (a `'` inside becomes
/// `'\''`), so nothing in a URL, header or body is read by the shell.
public enum CurlCommand {
    /// The command line. `redacted`: the request came through the redaction rules, so a
    /// value reading `[redacted]` is a stand-in, and a comment says so above the command.
    /// A binary body cannot ride in a shell word: it is named by `bodyFile` (`--data-binary
    /// @FILE`), which the caller writes, or left out with a comment.
    public static func line(method: String, url: String, headers: [String: String], body: RecordedBody?,
                            redacted: Bool, bodyFile: String? = nil) -> String {
        var comments: [String] = []
        var words = ["curl"]
        let hasBody = body != nil
        if method != "GET" && !(method == "POST" && hasBody) || method == "HEAD" {
            words += method == "HEAD" ? ["--head"] : ["-X", method]
        }
        words.append(quote(url))
        for (name, value) in headers.sorted(by: { $0.key.lowercased() < $1.key.lowercased() }) {
            // curl sets these itself from what it sends.
            if ["content-length", "host"].contains(name.lowercased()) { continue }
            if name.lowercased() == "accept-encoding", ["gzip", "br", "deflate"].contains(where: value.lowercased().contains) {
                words.append("--compressed")
                continue
            }
            words += ["-H", quote("\(name): \(value)")]
        }
        switch body {
        case .bytes(let data)?:
            if let text = String(data: data, encoding: .utf8) {
                words += ["--data-raw", quote(text)]
            } else if let bodyFile {
                words += ["--data-binary", quote("@" + bodyFile)]
            } else {
                comments.append("# the \(data.count)-byte binary body is not in this line")
            }
        case .omitted(let bytes, let reason)?:
            comments.append("# the body (\(bytes.map { "\($0) bytes" } ?? "size unknown")) was not recorded: \(reason)")
        case nil:
            break
        }
        let text = ([url] + headers.values + [body.flatMap { if case .bytes(let d) = $0 { String(data: d, encoding: .utf8) } else { nil } } ?? ""])
            .joined(separator: "\n")
        if redacted, text.contains(Redactor.placeholder) || text.contains(Redactor.urlPlaceholder) {
            comments.append("# [redacted] stands for values reqtop did not record; record with --no-redact to copy them")
        }
        return (comments + [words.joined(separator: " ")]).joined(separator: "\n") + "\n"
    }

    /// `text` as one shell word.
    public static func quote(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
