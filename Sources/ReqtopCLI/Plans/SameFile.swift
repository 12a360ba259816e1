import Foundation

/// Whether two paths name one file: by device and inode where both exist (another spelling
/// or a hard link is caught), else by their standardized paths (a file that does not exist
/// yet, as a recording before its first line).
enum SameFile {
    static func check(_ first: String, _ second: String) -> Bool {
        var a = stat(), b = stat()
        if stat(first, &a) == 0, stat(second, &b) == 0 {
            return a.st_dev == b.st_dev && a.st_ino == b.st_ino
        }
        func standard(_ path: String) -> String {
            URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        }
        return standard(first) == standard(second)
    }
}
