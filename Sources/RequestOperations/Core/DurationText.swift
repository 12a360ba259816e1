import Foundation

/// Seconds for people, in the engine's reasons and messages: "2s", "0.25s".
enum DurationText {
    /// Any value converts without trapping: a server's `Retry-After: 9223372036854775807`
    /// once crashed the process here (Int(Double) of it).
    static func format(_ seconds: TimeInterval) -> String {
        guard seconds.isFinite else { return "\(seconds)s" }
        let rounded = (seconds * 100).rounded() / 100
        guard rounded == rounded.rounded() else { return "\(rounded)s" }
        guard let whole = Int(exactly: rounded) else { return String(format: "%.0fs", rounded) }
        return "\(whole)s"
    }
}
