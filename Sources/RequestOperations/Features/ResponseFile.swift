import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An answer's body written to a file as it arrives (``RequestOptions/destination``), so a
/// large download costs no memory: written under a temporary name beside the destination and
/// moved into place (one `rename`, which replaces a regular file that was there, and is
/// refused for anything else: ``check(_:)``) only when the attempt that wrote it succeeded. A failed, cancelled or retried attempt leaves nothing under the final
/// name, and its partial file is removed.
final class ResponseFile: Sendable {
    let destination: URL
    let partialPath: String
    /// The open file and what was written; used under the operation's lock, kept in a
    /// `Mutex` of its own so the type is `Sendable` without exceptions.
    private let open: Mutex<(handle: FileHandle?, bytes: Int)>
    var bytes: Int { open.withLock { $0.bytes } }

    /// Opens `destination`'s partial file for an attempt (`.name.reqtop-partial-PID-N`): a new
    /// file (never through a link, never one someone else made first), 0600.
    init(destination: URL, attempt: Int) throws {
        self.destination = destination
        try Self.check(destination.path)
        let folder = destination.deletingLastPathComponent().path
        partialPath = folder + "/." + destination.lastPathComponent + ".reqtop-partial-\(getpid())-\(attempt)"
        unlink(partialPath)
        let descriptor = openFile(partialPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ResponseFileError("cannot write \(partialPath) (to save \(destination.path)): \(String(cString: strerror(errno)))")
        }
        open = Mutex((FileHandle(fileDescriptor: descriptor, closeOnDealloc: true), 0))
    }

    /// A destination is a regular file or nothing yet. The move into place replaces what is
    /// under the name, so anything else there is refused by name: a device (`/dev/null` would
    /// become a regular file), a symbolic link (`/proc/self/fd/1`, or one planted in a shared
    /// folder), a folder, a pipe or a socket.
    static func check(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            guard errno == ENOENT else {
                throw ResponseFileError("cannot save to \(path): \(String(cString: strerror(errno)))")
            }
            return
        }
        let kind: String
        switch info.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFLNK: kind = "a symbolic link"
        case S_IFDIR: kind = "a folder"
        case S_IFCHR, S_IFBLK: kind = "a device"
        case S_IFIFO: kind = "a pipe"
        case S_IFSOCK: kind = "a socket"
        default: kind = "not a regular file"
        }
        throw ResponseFileError("will not save to \(path): it is \(kind), and saving replaces what is there (name a regular file or a new one)")
    }

    func write(_ data: Data) throws {
        try open.withLock { open in
            do {
                try open.handle?.write(contentsOf: data)
                open.bytes += data.count
            } catch {
                throw ResponseFileError("cannot write \(destination.path): \(error.localizedDescription)")
            }
        }
    }

    private func close() {
        open.withLock { open in
            try? open.handle?.close()
            open.handle = nil
        }
    }

    /// Moves the whole body into place.
    func keep() throws {
        close()
        do {
            // Again at the move: the name may have been taken while the answer came.
            try Self.check(destination.path)
        } catch {
            discard()
            throw error
        }
        guard rename(partialPath, destination.path) == 0 else {
            let reason = String(cString: strerror(errno))
            discard()
            throw ResponseFileError("cannot move the download to \(destination.path): \(reason)")
        }
    }

    /// Removes the partial file (idempotent).
    func discard() {
        close()
        unlink(partialPath)
    }
}

/// Why an answer could not be written where it was to go.
public struct ResponseFileError: Error, Sendable, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension RequestOptions {
    /// Throws ``ResponseFileError``, naming what is there, unless `path` is a regular file or
    /// nothing yet: what ``destination`` may name. The engine checks it again when the
    /// answer comes and at the move into place; a caller can check it before sending.
    public static func checkDestination(_ path: String) throws {
        try ResponseFile.check(path)
    }
}

/// `open(2)`, named apart from ``ResponseFile``'s `open` state.
private func openFile(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    open(path, flags, mode)
}
