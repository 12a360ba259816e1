import Foundation
import NIOCore
import Synchronization

/// The NIO buffers behind the large answer parts this transport hands the engine as `Data`.
///
/// The engine speaks `Data` (it depends on Foundation only); a proxy writes NIO buffers. A
/// part of 16 KiB or more is lent to the engine without a copy — the `Data` points into the
/// buffer the connection read — and the buffer is kept here, by the address of its first
/// byte, for as long as that `Data` lives. ``buffer(for:)`` gives it back to a receiver that
/// writes to NIO (the proxy), which sends it on as it came: copying it into a buffer of its
/// own was a copy of every byte downloaded in userspace, 18 % of the proxy's CPU moving 1 GiB.
///
/// Only the same bytes are given back: a `Data` that is a slice or a copy of a lent one has
/// another address or length and finds nothing (its reader copies, as before).
public enum LentBuffers {
    /// Lent buffers by their first byte's address. Each entry also keeps the buffer's storage
    /// alive (and shared, so never written in place) until the `Data` over it is freed.
    private static let lent = Mutex<[UInt: ByteBuffer]>([:])

    /// `buffer`'s readable bytes as `Data`, without a copy.
    static func data(lending buffer: ByteBuffer) -> Data {
        buffer.withUnsafeReadableBytes { bytes -> Data in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return Data() }
            let key = UInt(bitPattern: base)
            lent.withLock { $0[key] = buffer }
            return Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count, deallocator: .custom { _, _ in
                // Taken out under the lock and let go after it: the storage may be freed here.
                let released = lent.withLock { $0.removeValue(forKey: key) }
                _ = released
            })
        }
    }

    /// The buffer `data` was lent from, if it is exactly a lent buffer's bytes.
    public static func buffer(for data: Data) -> ByteBuffer? {
        guard data.count >= minimumLent else { return nil }
        return data.withUnsafeBytes { bytes -> ByteBuffer? in
            guard let base = bytes.baseAddress else { return nil }
            guard let buffer = lent.withLock({ $0[UInt(bitPattern: base)] }), buffer.readableBytes == bytes.count else { return nil }
            return buffer
        }
    }

    /// Parts this large are lent; a smaller one is copied, so a trickle of tiny parts held in
    /// a stream cannot each pin a larger read buffer.
    static let minimumLent = 16 << 10

    /// Buffers lent now (for tests: each is let go of when its `Data` is).
    static var count: Int { lent.withLock { $0.count } }
}
