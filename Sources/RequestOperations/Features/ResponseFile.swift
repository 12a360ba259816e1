import Foundation
import Synchronization

/// An answer's body written to a file as it arrives (``RequestOptions/destination``), so a
/// large download costs no memory: written under a temporary name beside the destination and
/// moved into place (one `rename`, which replaces what was there) only when the attempt that
/// wrote it succeeded. A failed, cancelled or retried attempt leaves nothing under the final
/// name, and its partial file is removed.
final class ResponseFile: Sendable {
    let destination: URL
    let partialPath: String
    /// The open file and what was written; used under the operation's lock, kept in a
    /// `Mutex` of its own so the type is `Sendable` without exceptions.
    private let open: Mutex<(handle: FileHandle?, bytes: Int)>
    var bytes: Int { open.withLock { $0.bytes } }

    /// Opens `destination`'s partial file for an attempt (`.name.reqtop-partial-PID-N`).
    init(destination: URL, attempt: Int) throws {
        self.destination = destination
        let folder = destination.deletingLastPathComponent().path
        partialPath = folder + "/." + destination.lastPathComponent + ".reqtop-partial-\(getpid())-\(attempt)"
        guard FileManager.default.createFile(atPath: partialPath, contents: nil, attributes: [.posixPermissions: 0o600]),
              let handle = FileHandle(forWritingAtPath: partialPath) else {
            throw ResponseFileError("cannot write \(partialPath) (to save \(destination.path)): \(String(cString: strerror(errno)))")
        }
        open = Mutex((handle, 0))
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
struct ResponseFileError: Error, Sendable {
    let message: String
    init(_ message: String) { self.message = message }
}
