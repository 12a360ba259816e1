import Foundation

/// How a recorded response's body came, so that it is sent again the same way: the parts at
/// their times (a 20-second download takes 20 seconds again), the whole length even past the
/// bytes the recording kept (the rest is filler, and the answer says so), and a body cut off
/// mid-way ends the same way (the recorded length promised, the bytes that came, then the
/// connection closed, reset, or silent).
public struct BodyPace: Sendable, Equatable {
    /// One part of the body: when it came, in seconds after the response's head, and how
    /// many bytes.
    public struct Part: Sendable, Equatable {
        public var after: TimeInterval
        public var bytes: Int
        public init(after: TimeInterval, bytes: Int) { (self.after, self.bytes) = (after, bytes) }
    }

    /// How a body cut off before its end ended.
    public enum Cut: String, Sendable, Equatable {
        /// The connection closed (FIN).
        case close
        /// The connection reset (RST).
        case reset
        /// Nothing more came, and the connection stayed open (the attempt timed out reading).
        case stall
    }

    /// The parts in order. Empty: the body at once.
    public var parts: [Part]
    /// The body's whole length as it came; nil: as long as the recorded bytes.
    public var totalBytes: Int?
    /// The length the response's head promised (its `Content-Length`), sent again for a cut
    /// body so the client finds it short as it did.
    public var promisedBytes: Int?
    /// Set when the body was cut off before its end.
    public var cut: Cut?

    public init(parts: [Part] = [], totalBytes: Int? = nil, promisedBytes: Int? = nil, cut: Cut? = nil) {
        (self.parts, self.totalBytes, self.promisedBytes, self.cut) = (parts, totalBytes, promisedBytes, cut)
    }

    /// The header on an answer whose body is longer than the recording kept: which bytes
    /// are filler.
    public static let fillerHeader = "X-Reqtop-Filler"
    /// The byte the filler is made of: a space, so a JSON or text body stays what it was.
    public static let fillerByte = UInt8(ascii: " ")

    /// Whether the body needs sending part by part (or cut), rather than at once.
    public func matters(recordedBytes: Int) -> Bool {
        cut != nil || (totalBytes ?? recordedBytes) > recordedBytes || (parts.last?.after ?? 0) > 0.05
    }

    /// The parts to send for a body of `recordedBytes` kept: the recorded parts scaled to the
    /// whole length (a part per recorded `data` event), or one part at once.
    public func schedule(recordedBytes: Int) -> [Part] {
        Self.capped(uncapped(recordedBytes: recordedBytes))
    }

    /// The most a paced answer sends: a recording is input, and a `totalBytes` of 2^53 (or a
    /// `data` event that size) must not make the server allocate it.
    public static let maximumBytes = 1 << 30
    /// The most one part holds: a larger part goes as several at the same moment.
    static let partBytes = 1 << 20

    private static func capped(_ parts: [Part]) -> [Part] {
        var left = maximumBytes
        return parts.flatMap { part -> [Part] in
            let bytes = min(max(0, part.bytes), left)
            left -= bytes
            return stride(from: 0, to: bytes, by: partBytes).map { Part(after: part.after, bytes: min(partBytes, bytes - $0)) }
        }
    }

    private func uncapped(recordedBytes: Int) -> [Part] {
        let total = min(totalBytes ?? recordedBytes, Self.maximumBytes)
        let counted = parts.reduce(0) { $0 &+ max(0, $1.bytes) }
        guard counted > 0, total > 0 else { return total > 0 ? [Part(after: 0, bytes: total)] : [] }
        // A cut body sends what came; a whole one its whole length, in the recorded rhythm.
        guard cut == nil, counted != total else { return parts.filter { $0.bytes > 0 } }
        var sent = 0, seen = 0
        return parts.enumerated().compactMap { index, part in
            seen &+= max(0, part.bytes)
            let upTo = index == parts.count - 1 ? total : Int(Double(total) * Double(seen) / Double(counted))
            defer { sent = max(sent, upTo) }
            return upTo > sent ? Part(after: part.after, bytes: upTo - sent) : nil
        }
    }
}
