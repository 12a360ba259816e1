import Foundation

#if os(Linux)
/// Reading `/proc` for the program lookup (``ClientProgram``): folders of numbers, descriptor
/// paths and socket links, written and read as bytes in place.
extension ClientProgram {
    /// `socket:[N]`, the link a descriptor of socket `inode` reads as.
    static func socketLink(_ inode: UInt32) -> [UInt8] {
        var link = Array("socket:[".utf8)
        link.reserveCapacity(20)
        appendDigits(of: UInt64(inode), to: &link)
        link.append(UInt8(ascii: "]"))
        return link
    }

    /// Calls `body` with `/proc/PID/fd/N` as a C string, its digits written into one buffer
    /// (by interpolation, a string grown piece by piece and two numbers described, at every
    /// `readlink` of a lookup, #58).
    static func withDescriptorPath<Result>(_ pid: Int32, _ descriptor: Int32, _ body: (UnsafePointer<CChar>) -> Result) -> Result {
        var path: [UInt8] = []
        path.reserveCapacity(40)
        path.append(contentsOf: "/proc/".utf8)
        appendDigits(of: UInt64(UInt32(bitPattern: pid)), to: &path)
        path.append(contentsOf: "/fd/".utf8)
        appendDigits(of: UInt64(UInt32(bitPattern: descriptor)), to: &path)
        path.append(0)
        return path.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }

    /// `value` in decimal.
    static func appendDigits(of value: UInt64, to bytes: inout [UInt8]) {
        let start = bytes.count
        var rest = value
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        bytes[start...].reverse()
    }

    /// N of a link `socket:[N]`.
    static func socketInode(inLink link: UnsafeBufferPointer<UInt8>) -> UInt32? {
        let prefix = "socket:[".utf8
        guard link.count > prefix.count + 1, link.starts(with: prefix), link.last == UInt8(ascii: "]") else { return nil }
        var inode: UInt32 = 0
        for byte in link[prefix.count..<(link.count - 1)] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            let (times, overflowTimes) = inode.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(UInt32(byte - UInt8(ascii: "0")))
            guard !overflowTimes, !overflowSum else { return nil }
            inode = sum
        }
        return inode == 0 ? nil : inode
    }

    /// Calls `body` with each entry of `folder` whose name is a number, until it says stop;
    /// the `errno` of the folder's opening when it cannot be opened, nil when it was.
    @discardableResult
    static func forEachNumber(in folder: String, _ body: (Int32) -> Bool) -> Int32? {
        guard let directory = opendir(folder) else { return errno }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let number = withUnsafeBytes(of: entry.pointee.d_name) { name -> Int32? in
                var value: Int32 = 0
                for byte in name {
                    if byte == 0 { break }
                    guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), value < Int32.max / 10 else { return nil }
                    value = value * 10 + Int32(byte - UInt8(ascii: "0"))
                }
                return name.first == 0 ? nil : value
            }
            if let number, !body(number) { return nil }
        }
        return nil
    }
}
#endif
