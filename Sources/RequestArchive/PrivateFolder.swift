import Foundation

/// Folders and files reqtop keeps for the person in a shared place such as `/tmp` (the
/// monitor's `y` copies, the editor's file for `e`), made so that another user on the
/// machine can neither read them nor steer a write:
///
/// - a folder is made 0700; one that is already there is taken only when it is a real folder
///   (not a symbolic link), owned by this user and closed to everyone else — another user
///   could otherwise make it first and plant links in it, or swap a file between the write
///   and the read;
/// - a file is created new (`O_CREAT|O_EXCL|O_NOFOLLOW`, 0600): never through a link, never
///   into a file someone else opened first.
public enum PrivateFolder {
    /// Makes `path` (its parent must exist), or checks the one that is there.
    /// - Returns: `path`.
    @discardableResult
    public static func make(_ path: String) throws -> String {
        if mkdir(path, 0o700) != 0 {
            guard errno == EEXIST else {
                throw ArchiveError(file: path, message: "cannot make the folder (\(String(cString: strerror(errno))))")
            }
        }
        try check(path)
        return path
    }

    /// A new folder only this user can enter, named `prefix` and six random characters, in
    /// `parent` (`mkdtemp`): nobody can have made it first.
    public static func makeUnique(in parent: String, prefix: String) throws -> String {
        var template = Array(((parent.hasSuffix("/") ? parent : parent + "/") + prefix + "XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw ArchiveError(file: parent, message: "cannot make a folder in it (\(String(cString: strerror(errno))))")
        }
        return String(cString: made)
    }

    /// Throws, naming the problem, unless `path` is a folder (not a link) that this user owns
    /// and no one else may enter.
    public static func check(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw ArchiveError(file: path, message: "cannot be read (\(String(cString: strerror(errno))))")
        }
        guard info.st_mode & S_IFMT != S_IFLNK else {
            throw ArchiveError(file: path, message: "is a symbolic link, not a folder of this user's; reqtop does not write through it (remove it)")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw ArchiveError(file: path, message: "is not a folder (remove it)")
        }
        guard info.st_uid == geteuid() else {
            throw ArchiveError(file: path, message: "belongs to another user (uid \(info.st_uid)); reqtop does not write there (remove it)")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw ArchiveError(file: path, message: "is open to other users (mode \(String(info.st_mode & 0o777, radix: 8))); reqtop keeps its files in a folder only you can enter (chmod 700 it, or remove it)")
        }
    }

    /// Writes `data` as a new file at `path` (in a folder ``make(_:)`` checked), 0600 (or
    /// `mode`, never more than the owner's). What is there under the name already (a file of
    /// an earlier copy, a link) is removed first, not followed.
    public static func writeNew(_ data: Data, to path: String, mode: mode_t = 0o600) throws {
        if unlink(path) != 0, errno != ENOENT {
            throw ArchiveError(file: path, message: "cannot replace (\(String(cString: strerror(errno))))")
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0o700)
        guard descriptor >= 0 else {
            throw ArchiveError(file: path, message: "cannot write (\(String(cString: strerror(errno))))")
        }
        defer { close(descriptor) }
        // The umask may have taken the owner's execute bit: set as asked.
        fchmod(descriptor, mode & 0o700)
        try OutputFile.write(data, to: descriptor, path: path)
    }

    /// Reads a file back without following a link at its name.
    public static func read(_ path: String) throws -> Data {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw ArchiveError(file: path, message: "cannot read (\(String(cString: strerror(errno))))")
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        return try handle.readToEnd() ?? Data()
    }
}
