import Foundation

/// A running answer's progress: what came, how fast, and what is left — for the detail's
/// header and Response tab (a download a person waits on).
extension OperationRow {
    struct Transfer: Equatable {
        var bytes: Int
        var expected: Int?
        /// Bytes a second since the answer began; nil before a byte came.
        var rate: Double?
        /// Seconds until the expected length at this rate.
        var left: TimeInterval?
    }

    /// The answer in progress at `now`; nil when none is coming (not running, no response yet).
    func transfer(at now: TimeInterval) -> Transfer? {
        guard state == .running, let began = attempts.last(where: { $0.responseAt != nil && $0.end == nil })?.responseAt, now >= began else { return nil }
        let elapsed = now - began
        let rate = bytes > 0 && elapsed > 0 ? Double(bytes) / elapsed : nil
        let left = expectedBytes.flatMap { expected in rate.map { max(0, Double(expected - bytes)) / $0 } }
        return Transfer(bytes: bytes, expected: expectedBytes, rate: rate, left: left)
    }
}

extension OperationRow.Transfer {
    /// `↓ 12.3M of 64.0M · 40.1M/s · 1.3s left`.
    var text: String {
        var parts = ["↓ \(Format.bytes(bytes))" + (expected.map { " of \(Format.bytes($0))" } ?? "")]
        if let rate { parts.append("\(Format.bytes(Int(rate)))/s") }
        if let left { parts.append("\(Format.seconds(left)) left") }
        return parts.joined(separator: " · ")
    }
}
