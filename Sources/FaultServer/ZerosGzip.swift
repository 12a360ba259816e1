/// A gzip member of `count` zero bytes that is small on the wire (about 1/159 of its size):
/// one literal zero, then back-references of 258 bytes at distance 1 in a fixed-Huffman
/// deflate block (RFC 1951 §3.2.6) — what a decompression bomb is made of, built by hand so
/// the fault server needs no compressor.
enum ZerosGzip {
    static func encode(count: Int) -> [UInt8] {
        var bits = BitWriter()
        bits.append(header: [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff])
        bits.write(1, count: 1)  // BFINAL
        bits.write(1, count: 2)  // BTYPE 01: fixed Huffman
        var left = count
        if left > 0 {
            bits.writeCode(0x30, length: 8)  // literal 0
            left -= 1
        }
        while left >= 258 {
            bits.writeCode(0b1100_0101, length: 8)  // length code 285: 258 bytes
            bits.writeCode(0, length: 5)  // distance code 0: distance 1
            left -= 258
        }
        for _ in 0..<left { bits.writeCode(0x30, length: 8) }
        bits.writeCode(0, length: 7)  // end of block (256)
        var out = bits.finish()
        let crc = StoredGzip.crc32(zeros: count)
        out += (0..<4).map { UInt8((crc >> (8 * $0)) & 0xff) }
        out += (0..<4).map { UInt8((UInt32(truncatingIfNeeded: count) >> (8 * $0)) & 0xff) }
        return out
    }

    /// Deflate's bit order: fields from their lowest bit, Huffman codes from their highest.
    private struct BitWriter {
        private var bytes: [UInt8] = []
        private var pending: UInt32 = 0
        private var pendingCount = 0

        mutating func append(header: [UInt8]) { bytes += header }

        mutating func write(_ value: UInt32, count: Int) {
            for index in 0..<count { push((value >> index) & 1) }
        }

        mutating func writeCode(_ code: UInt32, length: Int) {
            for index in stride(from: length - 1, through: 0, by: -1) { push((code >> index) & 1) }
        }

        private mutating func push(_ bit: UInt32) {
            pending |= bit << pendingCount
            pendingCount += 1
            if pendingCount == 8 {
                bytes.append(UInt8(pending))
                (pending, pendingCount) = (0, 0)
            }
        }

        mutating func finish() -> [UInt8] {
            if pendingCount > 0 { bytes.append(UInt8(pending)) }
            (pending, pendingCount) = (0, 0)
            return bytes
        }
    }
}
