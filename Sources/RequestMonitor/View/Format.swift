import Foundation

/// Numbers as the table shows them: short, fixed width, no surprises.
enum Format {
    /// `0.4s`, `12.3s`, `2m03s`.
    static func seconds(_ value: TimeInterval) -> String {
        if value < 60 { return String(format: "%.1fs", value) }
        let whole = Int(value)
        return "\(whole / 60)m" + String(format: "%02ds", whole % 60)
    }

    /// How long something took, at most 5 characters (the DUR column is 6): `<1ms`, `3ms`,
    /// `245ms`, `1.2s`, `12.3s`, `2m03s`. Under a second in milliseconds: a proxy's requests
    /// mostly take a few, and `0.0s` on every row told a 2 ms answer from a 40 ms one nothing.
    static func duration(_ value: TimeInterval) -> String {
        guard value < 0.9995 else { return seconds(value) }
        let milliseconds = (max(0, value) * 1000).rounded()
        return milliseconds < 1 ? "<1ms" : "\(Int(milliseconds))ms"
    }

    /// At most 5 characters (the SIZE column is 6): `512B`, `12.3K`, `640K`, `4.0G`. A unit
    /// goes on to the next at 1000 of it — `4096.0M` did not fit and was shown as `096.0M`.
    static func bytes(_ value: Int) -> String {
        if value < 1000 { return "\(value)B" }
        var amount = Double(value) / 1024
        for unit in ["K", "M", "G", "T"] {
            if amount < 99.95 { return String(format: "%.1f", amount) + unit }
            if amount < 999.5 || unit == "T" { return String(format: "%.0f", amount) + unit }
            amount /= 1024
        }
        return "\(value)B"
    }

    /// Left-aligned in `width`, cut with `ellipsis` when too long.
    static func fit(_ text: String, _ width: Int, ellipsis: String = "…") -> String {
        guard width > 0 else { return "" }
        if text.count <= width { return text + String(repeating: " ", count: width - text.count) }
        return String(text.prefix(width - 1)) + ellipsis
    }

    static func right(_ text: String, _ width: Int) -> String {
        text.count >= width ? String(text.suffix(width)) : String(repeating: " ", count: width - text.count) + text
    }
}
