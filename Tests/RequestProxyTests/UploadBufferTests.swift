import NIOCore
@testable import RequestProxy
import RequestTransportNIO
import Synchronization
import XCTest

/// A client's upload between its connection and the upstream leg: parts handed on as the
/// connection read them (no copy, not cut smaller than asked), the client held back while the
/// buffer is full and let go once it drained.
final class UploadBufferTests: XCTestCase {
    private func taken(_ buffer: UploadBuffer, maxLength: Int) -> ByteBufferPart? {
        let got = Mutex<ByteBufferPart?>(nil)
        buffer.nextBuffer(maxLength: maxLength) { part in got.withLock { $0 = part } }
        return got.withLock { $0 }
    }

    func testAPartIsHandedOnAsTheConnectionReadItUpToWhatWasAsked() throws {
        let upload = UploadBuffer(capacity: 4 << 20)
        var read = ByteBufferAllocator().buffer(capacity: 1 << 20)
        read.writeRepeatingByte(7, count: 1 << 20)
        XCTAssertTrue(upload.append(read, whenRoom: {}))
        guard case .buffer(let whole)? = taken(upload, maxLength: 1 << 20) else { return XCTFail("no part") }
        XCTAssertEqual(whole.readableBytes, 1 << 20, "one read, one part")
        let sameStorage = read.withUnsafeReadableBytes { a in whole.withUnsafeReadableBytes { b in a.baseAddress == b.baseAddress } }
        XCTAssertTrue(sameStorage, "the part is the client's read, not a copy of it")
        // Asked for less, the rest waits for the next ask.
        XCTAssertTrue(upload.append(read, whenRoom: {}))
        guard case .buffer(let first)? = taken(upload, maxLength: 1000) else { return XCTFail("no part") }
        guard case .buffer(let rest)? = taken(upload, maxLength: 1 << 20) else { return XCTFail("no rest") }
        XCTAssertEqual([first.readableBytes, rest.readableBytes], [1000, (1 << 20) - 1000])
        upload.finish()
        guard case .end? = taken(upload, maxLength: 1 << 20) else { return XCTFail("no end") }
    }

    func testTheLentBytesFormGivesTheSameBytes() throws {
        let upload = UploadBuffer(capacity: 1 << 20)
        XCTAssertTrue(upload.append(ByteBuffer(string: "hello, upstream"), whenRoom: {}))
        let text = Mutex<String?>(nil)
        upload.nextPart(maxLength: 5) { part in
            if case .bytes(let bytes) = part { text.withLock { $0 = String(decoding: bytes, as: UTF8.self) } }
        }
        XCTAssertEqual(text.withLock { $0 }, "hello")
    }

    func testAFullBufferHoldsTheClientBackUntilItDrains() throws {
        let upload = UploadBuffer(capacity: 100)
        let resumed = Mutex(0)
        XCTAssertTrue(upload.append(ByteBuffer(repeating: 1, count: 60), whenRoom: { resumed.withLock { $0 += 1 } }))
        XCTAssertFalse(upload.append(ByteBuffer(repeating: 2, count: 60), whenRoom: { resumed.withLock { $0 += 1 } }),
                       "120 of 100 bytes wait: read no more")
        _ = taken(upload, maxLength: 60)
        XCTAssertEqual(resumed.withLock { $0 }, 0, "60 still wait: more than half")
        _ = taken(upload, maxLength: 20)
        XCTAssertEqual(resumed.withLock { $0 }, 1, "40 wait: the client is let go on, once")
        _ = taken(upload, maxLength: 40)
        XCTAssertEqual(resumed.withLock { $0 }, 1)
    }
}
