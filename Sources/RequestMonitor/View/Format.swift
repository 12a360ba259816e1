import Foundation

/// Numbers as the table shows them: short, fixed width, no surprises.
enum Format {
    /// `0.4s`, `12.3s`, `2m03s`.
    static func seconds(_ value: TimeInterval) -> String {
        if value < 60 { return String(format: "%.1fs", value) }
        let whole = Int(value)
        return "\(whole / 60)m" + String(format: "%02ds", whole % 60)
    }

    /// `512B`, `12.3K`, `4.0M`.
    static func bytes(_ value: Int) -> String {
        if value < 1024 { return "\(value)B" }
        if value < 1024 * 1024 { return String(format: "%.1fK", Double(value) / 1024) }
        return String(format: "%.1fM", Double(value) / 1024 / 1024)
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
