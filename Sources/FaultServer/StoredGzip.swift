/// A gzip member (RFC 1952) whose deflate data is stored blocks (RFC 1951 §3.2.4): every
/// decoder reads it, and it needs no compressor, so the fault server can answer with
/// `Content-Encoding: gzip` without a dependency. The size on the wire is a little over the
/// decoded size; what the tests check is that both transports decode it alike.
enum StoredGzip {
    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]
        var offset = 0
        repeat {
            let count = min(65_535, bytes.count - offset)
            let last: UInt8 = offset + count == bytes.count ? 1 : 0
            out.append(last)
            out += [UInt8(count & 0xff), UInt8(count >> 8), UInt8(~count & 0xff), UInt8((~count >> 8) & 0xff)]
            out += bytes[offset..<offset + count]
            offset += count
        } while offset < bytes.count
        out += littleEndian(crc32(bytes)) + littleEndian(UInt32(truncatingIfNeeded: bytes.count))
        return out
    }

    private static func littleEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8((value >> (8 * $0)) & 0xff) }
    }

    private static let table: [UInt32] = (0..<256).map { index -> UInt32 in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? 0xedb8_8320 ^ (crc >> 1) : crc >> 1 }
        return crc
    }

    /// The CRC-32 of `count` zero bytes, without making them.
    static func crc32(zeros count: Int) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        table.withUnsafeBufferPointer { table in
            for _ in 0..<count { crc = table[Int(crc & 0xff)] ^ (crc >> 8) }
        }
        return crc ^ 0xffff_ffff
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xff)] ^ (crc >> 8) }
        return crc ^ 0xffff_ffff
    }
}
