import Foundation
import RequestOperations

/// A running request's progress: its body going up, then its answer coming down — what
/// moved, how fast, and what is left — for the detail's header and its Request and Response
/// tabs (an upload or a download a person waits on).
extension OperationRow {
    struct Transfer: Equatable {
        enum Direction: Equatable { case up, down }
        var direction: Direction = .down
        var bytes: Int
        var expected: Int?
        /// Bytes a second since the answer began; nil before a byte came.
        var rate: Double?
        /// Seconds until the expected length at this rate.
        var left: TimeInterval?
        /// The answer's `Content-Encoding` (gzip, deflate): `bytes` are then decoded bytes and
        /// `expected` is the size on the wire, so neither "of" nor a time left can be said.
        var encoding: String? = nil
    }

    /// The transfer in progress at `now`: the answer once it began, else the request's body
    /// while it is sent; nil when neither moves (not running, nothing sent yet).
    func transfer(at now: TimeInterval) -> Transfer? {
        guard state == .running else { return nil }
        if let attempt = attempts.last, attempt.end == nil, attempt.responseAt == nil, uploadedBytes > 0, let began = attempt.taskAt, now >= began {
            let elapsed = now - began
            let rate = elapsed > 0 ? Double(uploadedBytes) / elapsed : nil
            let left = uploadTotal.flatMap { total in rate.map { max(0, Double(total - uploadedBytes)) / $0 } }
            return Transfer(direction: .up, bytes: uploadedBytes, expected: uploadTotal, rate: rate, left: left)
        }
        guard let began = attempts.last(where: { $0.responseAt != nil && $0.end == nil })?.responseAt, now >= began else { return nil }
        let elapsed = now - began
        let rate = bytes > 0 && elapsed > 0 ? Double(bytes) / elapsed : nil
        let encoding = responseHeaders.contentCoding
        let left = encoding != nil ? nil : expectedBytes.flatMap { expected in rate.map { max(0, Double(expected - bytes)) / $0 } }
        return Transfer(bytes: bytes, expected: expectedBytes, rate: rate, left: left, encoding: encoding)
    }
}

extension OperationRow.Transfer {
    /// `↓ 12.3M of 64.0M · 40.1M/s · 1.3s left` (`↑` for a body going up); encoded: `↓ 12.3M decoded · gzip, 1.1M on the wire · 40.1M/s`.
    var text: String {
        var parts: [String]
        if let encoding {
            parts = ["↓ \(Format.bytes(bytes)) decoded", encoding + (expected.map { ", \(Format.bytes($0)) on the wire" } ?? "")]
        } else {
            parts = ["\(direction == .up ? "↑" : "↓") \(Format.bytes(bytes))" + (expected.map { " of \(Format.bytes($0))" } ?? "")]
        }
        if let rate { parts.append("\(Format.bytes(Int(rate)))/s") }
        if let left { parts.append("\(Format.seconds(left)) left") }
        return parts.joined(separator: " · ")
    }
}
