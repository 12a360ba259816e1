import Foundation

/// Reads a file reqtop was given (a plan, a recording, a HAR) whole, and says why not in
/// words a person can act on. Foundation's own errors here are "NSCocoaErrorDomain error
/// 256" for a folder and "permission denied" for a pipe, even as root.
///
/// Regular files are read as usual; a pipe or a device (`run <(make-plan)`, `/dev/stdin`)
/// is read to its end instead of being refused.
public enum InputFile {
    public static func read(_ path: String) throws -> Data {
        switch try kind(of: path) {
        case S_IFREG:
            do {
                return try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw ArchiveError(file: path, message: "cannot read the file (\(ArchiveError.describe(readError: error)))")
            }
        default:
            // A pipe, a socket or a device: read what it gives until its end.
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw ArchiveError(file: path, message: "cannot read the file (\(String(cString: strerror(errno))))")
            }
            defer { try? handle.close() }
            do {
                return try handle.readToEnd() ?? Data()
            } catch {
                throw ArchiveError(file: path, message: "cannot read the file (\(ArchiveError.describe(readError: error)))")
            }
        }
    }

    /// The kind of file `path` names (`S_IFREG`, `S_IFIFO`, ...), or the error a person reads
    /// for no name, no such file, or a folder.
    public static func kind(of path: String) throws -> mode_t {
        guard !path.isEmpty else { throw ArchiveError(file: "\"\"", message: "no file name given") }
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw ArchiveError(file: path, message: "cannot read the file (\(errno == ENOENT ? "no such file" : String(cString: strerror(errno))))")
        }
        guard info.st_mode & S_IFMT != S_IFDIR else { throw ArchiveError(file: path, message: "is a folder; name a file") }
        return info.st_mode & S_IFMT
    }
}
