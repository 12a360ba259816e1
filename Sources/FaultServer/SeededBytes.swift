import NIOCore

/// The bytes `/bytes/{n}?seed=S` sends — a SplitMix64 stream, different for every seed — made
/// part by part, so a body of any size costs the server one part of memory (it was built
/// whole: a request for 4 GiB crashed the server, and with it `reqtop demo`).
public struct SeededBytes: Sendable {
    private var state: UInt64
    /// The word being handed out, and how many of its bytes (low first) are left.
    private var word: UInt64 = 0
    private var left = 0

    public init(seed: UInt64) {
        state = seed
    }

    private mutating func nextWord() -> UInt64 {
        Self.mix(&state)
    }

    /// SplitMix64's step: the next word of the stream that starts at `state`.
    private static func mix(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The next `count` bytes, written to `buffer`. Whole words go straight into the buffer's
    /// memory: through `writeInteger` a debug build (the tests' server) made 6 MB/s.
    public mutating func write(_ count: Int, into buffer: inout ByteBuffer) {
        var count = count
        while count > 0, left > 0 {
            buffer.writeInteger(UInt8(truncatingIfNeeded: word))
            (word, left, count) = (word >> 8, left - 1, count - 1)
        }
        let words = count / 8
        if words > 0 {
            var state = self.state
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: words * 8) { memory in
                for index in 0..<words {
                    memory.storeBytes(of: Self.mix(&state).littleEndian, toByteOffset: index &* 8, as: UInt64.self)
                }
                return words * 8
            }
            self.state = state
            count -= words * 8
        }
        if count > 0 {
            (word, left) = (nextWord(), 8)
            write(count, into: &buffer)
        }
    }

    /// The next `count` bytes.
    public mutating func next(_ count: Int) -> [UInt8] {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(count)
        write(count, into: &buffer)
        return buffer.readBytes(length: count) ?? []
    }
}
