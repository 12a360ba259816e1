/// Where a byte offset is in a text, as people count: line and column from 1 (columns count
/// bytes). One way for every message that names a place in a file.
public enum TextPosition {
    public static func lineAndColumn<Bytes: Collection>(of offset: Int, in bytes: Bytes) -> (line: Int, column: Int)
    where Bytes.Element == UInt8 {
        var line = 1, column = 1
        for byte in bytes.prefix(max(0, offset)) {
            if byte == 0x0A {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return (line, column)
    }

    /// `line L, column C`.
    public static func describe<Bytes: Collection>(offset: Int, in bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let (line, column) = lineAndColumn(of: offset, in: bytes)
        return "line \(line), column \(column)"
    }
}
