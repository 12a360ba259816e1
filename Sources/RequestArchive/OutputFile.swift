import Foundation

/// Opens a file reqtop writes (a recording, an exported HAR) so that it cannot destroy
/// what it should not:
///
/// - never one of the command's own inputs (`run p.json --record p.json`, `export r.jsonl
///   --har r.jsonl`), compared by device and inode so another path or a hard link to the
///   same file is caught too;
/// - never through a symbolic link (`O_NOFOLLOW`): in a shared folder such as /tmp, a link
///   planted under the recording's name would make reqtop overwrite its target. Links under
///   `/dev/` and `/proc/self/fd/` (`/dev/stdout`) are the system's own and are followed;
/// - never a folder, and with a message a person can act on when the folder is missing or
///   not writable;
/// - readable by its owner only (0600), whatever the umask.
public enum OutputFile {
    /// Creates or truncates `path` for writing and returns its descriptor (close-on-exec).
    /// - Parameter inputs: the files the command reads.
    public static func create(_ path: String, notOver inputs: [String] = []) throws -> Int32 {
        guard !path.isEmpty else { throw ArchiveError(file: "\"\"", message: "no file name given") }
        var existing = stat()
        let exists = lstat(path, &existing) == 0
        let systemLink = path.hasPrefix("/dev/") || path.hasPrefix("/proc/self/fd/")
        if exists {
            if existing.st_mode & S_IFMT == S_IFLNK, !systemLink {
                throw ArchiveError(file: path, message: "is a symbolic link; reqtop does not write through one (name the file it points to, or remove the link)")
            }
            if systemLink { _ = stat(path, &existing) }
            if existing.st_mode & S_IFMT == S_IFDIR {
                throw ArchiveError(file: path, message: "is a folder; name a file to write")
            }
            for input in inputs where isSameFile(path, input) {
                throw ArchiveError(file: path, message: "is also this command's input (\(input)); writing it would destroy what is being read. Choose another file")
            }
        }
        let flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (systemLink ? 0 : O_NOFOLLOW)
        // 0600: a recording or a HAR holds bodies and headers, secrets among them where
        // `--no-redact` was given. A file that was there already keeps its mode through
        // O_TRUNC, so a regular one is made 0600 too (a device such as /dev/stdout is not).
        let descriptor = open(path, flags, 0o600)
        guard descriptor >= 0 else {
            throw ArchiveError(file: path, message: "cannot write (\(describe(openError: errno, path: path)))")
        }
        var opened = stat()
        if fstat(descriptor, &opened) == 0, opened.st_mode & S_IFMT == S_IFREG, opened.st_mode & 0o077 != 0 {
            _ = fchmod(descriptor, 0o600)
        }
        return descriptor
    }

    /// Whether two paths name one file: by device and inode where both exist (another
    /// spelling or a hard link is caught), else by their standardized paths (a file not
    /// written yet, as a recording before its first line).
    public static func isSameFile(_ first: String, _ second: String) -> Bool {
        var a = stat(), b = stat()
        if stat(first, &a) == 0, stat(second, &b) == 0 {
            return a.st_dev == b.st_dev && a.st_ino == b.st_ino
        }
        func standard(_ path: String) -> String {
            URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        }
        return standard(first) == standard(second)
    }

    private static func describe(openError code: Int32, path: String) -> String {
        switch code {
        case ELOOP: return "it is a symbolic link"
        case ENOENT: return "the folder \(URL(fileURLWithPath: path).deletingLastPathComponent().path) does not exist"
        case EISDIR: return "it is a folder"
        default: return String(cString: strerror(code))
        }
    }

    /// Writes all of `bytes` to `descriptor`, retrying short writes and interruptions.
    public static func write(_ bytes: some Collection<UInt8>, to descriptor: Int32, path: String) throws {
        try Array(bytes).withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw ArchiveError(file: path, message: "writing failed (\(String(cString: strerror(errno))))")
                }
                offset += written
            }
        }
    }
}
