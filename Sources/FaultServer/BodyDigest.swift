/// The length and 64-bit FNV-1a hash of a body read in parts: what `/sink` answers, so a
/// test can check a gigabyte arrived byte for byte without either side holding it.
public struct BodyDigest: Sendable, Equatable {
    public private(set) var count = 0
    public private(set) var hash: UInt64 = 0xcbf2_9ce4_8422_2325

    public init() {}

    public mutating func add<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        var hash = self.hash, count = 0
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            count += 1
        }
        self.hash = hash
        self.count += count
    }

    /// `bytes` more, counted and not hashed (`/sink?hash=0`: a benchmark's upload, where the
    /// server's hashing, a byte at a time, would be the slowest part).
    public mutating func count(_ bytes: Int) {
        count += bytes
    }

    /// The hash as 16 hex digits.
    public var hex: String {
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
