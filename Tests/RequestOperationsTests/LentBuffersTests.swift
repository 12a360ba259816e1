import Foundation
import NIOCore
@testable import RequestTransportNIO
import Testing

/// An answer's large parts lent to the engine as `Data` without a copy, and given back as the
/// same buffer to a receiver that writes to NIO (the proxy) — only while that `Data` lives,
/// and only for exactly its bytes.
@Suite("Lent read buffers", .serialized)
struct LentBuffersTests {
    @Test func aLentPartIsGivenBackAsTheBufferItPointsInto() {
        var read = ByteBufferAllocator().buffer(capacity: 64 << 10)
        read.writeRepeatingByte(9, count: 40 << 10)
        read.moveReaderIndex(forwardBy: 100)   // a part need not start at the buffer's start
        let before = LentBuffers.count
        do {
            let data = LentBuffers.data(lending: read)
            #expect(data.count == (40 << 10) - 100)
            #expect(data.allSatisfy { $0 == 9 })
            let back = LentBuffers.buffer(for: data)
            #expect(back?.readableBytes == data.count)
            let same = back.map { back in read.withUnsafeReadableBytes { a in back.withUnsafeReadableBytes { b in a.baseAddress == b.baseAddress } } }
            #expect(same == true, "the bytes the connection read, not a copy")
            // A slice or a copy of the part is not the lent buffer: its reader copies.
            #expect(LentBuffers.buffer(for: data.dropFirst(1)) == nil)
            #expect(LentBuffers.buffer(for: Data(Array(data))) == nil)
            #expect(LentBuffers.count == before + 1)
        }
        #expect(LentBuffers.count == before, "let go of with its Data")
    }

    @Test func aSmallPartIsNeverLookedFor() {
        let small = Data(repeating: 1, count: 100)
        #expect(LentBuffers.buffer(for: small) == nil)
    }
}
