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
    /// - Parameter uploadFile: the file the request's body was read from (`RecordedOptions.bodyFile`),
    ///   when it had no recorded body: named with `--data-binary @FILE` and a comment.
    public static func line(method: String, url: String, headers: [String: String], body: RecordedBody?,
                            redacted: Bool, bodyFile: String? = nil, uploadFile: String? = nil) -> String {
        var comments: [String] = []
        var words = ["curl"]
        var pipe: String?
        let hasBody = body != nil || uploadFile != nil
        if method != "GET" && !(method == "POST" && hasBody) || method == "HEAD" {
            words += method == "HEAD" ? ["--head"] : ["-X", method]
        }
        words.append(quote(url))
        // curl writes these itself from what it sends; a `Host` naming another host than the
        // URL's (a virtual host on an address) is the request's own and goes with it.
        for (name, value) in HostAddress.withoutDerivedHost(headers, url: url).sorted(by: { $0.key.lowercased() < $1.key.lowercased() }) {
            if name.lowercased() == "content-length" { continue }
            if name.lowercased() == "accept-encoding", ["gzip", "br", "deflate"].contains(where: value.lowercased().contains) {
                words.append("--compressed")
                continue
            }
            // `Name:` would make curl remove the header; `Name;` sends it with no value.
            words += ["-H", quote(value.isEmpty ? "\(name);" : "\(name): \(value)")]
        }
        // With a body and no type of its own, curl would add a form's type: `Content-Type:`
        // tells it not to.
        if hasBody, !headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
            words += ["-H", quote("Content-Type:")]
        }
        switch body {
        case .bytes(let data)?:
            if let text = String(data: data, encoding: .utf8), !text.utf8.contains(0) {
                words += ["--data-raw", quote(text)]
            } else if let bodyFile {
                words += ["--data-binary", quote("@" + bodyFile)]
            } else {
                // Bytes a shell word cannot hold (a NUL, or not UTF-8): printf makes them.
                pipe = "printf " + quote(printfFormat(data)) + " |"
                words += ["--data-binary", "@-"]
            }
        case .omitted(let bytes, let reason)?:
            comments.append("# the body (\(bytes.map { "\($0) bytes" } ?? "size unknown")) was not recorded: \(Self.comment(reason))")
        case nil:
            if let uploadFile {
                comments.append("# the body was read from \(Self.comment(uploadFile)) when the request was sent")
                words += ["--data-binary", quote("@" + uploadFile)]
            }
        }
        let text = ([url] + headers.values + [body.flatMap { if case .bytes(let d) = $0 { String(data: d, encoding: .utf8) } else { nil } } ?? ""])
            .joined(separator: "\n")
        if redacted, text.contains(Redactor.placeholder) || text.contains(Redactor.urlPlaceholder) {
            comments.append("# [redacted] stands for values reqtop did not record; record with --no-redact to copy them")
        }
        let command = ([pipe].compactMap { $0 } + words).joined(separator: " ")
        return (comments + [command]).joined(separator: "\n") + "\n"
    }

    /// `data` as a `printf` format that prints exactly those bytes (POSIX `\ooo` escapes).
    static func printfFormat(_ data: Data) -> String {
        var format = ""
        for byte in data {
            switch byte {
            case UInt8(ascii: "%"): format += "%%"
            case UInt8(ascii: "\\"): format += "\\\\"
            case 0x20..<0x7F: format.unicodeScalars.append(Unicode.Scalar(byte))
            default: format += "\\" + String(repeating: "0", count: 3 - String(byte, radix: 8).count) + String(byte, radix: 8)
            }
        }
        return format
    }

    /// A path in a comment, with nothing in it that could end the line or reach the terminal.
    private static func comment(_ text: String) -> String {
        TerminalText.clean(text, singleLine: true)
    }

    /// `text` as one shell word for a POSIX shell: single-quoted (a `'` inside becomes
    /// `'\''`). A control character other than a line break or a tab (an escape, a bell, a
    /// carriage return in a header) is written as `"$(printf '\ooo')"` beside the quoted
    /// parts, so the line carries no raw control character to a terminal and the shell still
    /// passes the same bytes (dash, Debian's `sh`, has no `$'…'`).
    public static func quote(_ text: String) -> String {
        var word = "", plain = ""
        func flush() {
            if !plain.isEmpty { word += "'" + plain.replacingOccurrences(of: "'", with: "'\\''") + "'" }
            plain = ""
        }
        for scalar in text.unicodeScalars {
            if TerminalText.isControl(scalar), scalar != "\n", scalar != "\t" {
                flush()
                let bytes = String(scalar).utf8.map { "\\" + String(repeating: "0", count: 3 - String($0, radix: 8).count) + String($0, radix: 8) }
                word += "\"$(printf '" + bytes.joined() + "')\""
            } else {
                plain.unicodeScalars.append(scalar)
            }
        }
        flush()
        return word.isEmpty ? "''" : word
    }
}
