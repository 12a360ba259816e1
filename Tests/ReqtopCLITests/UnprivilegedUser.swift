import Foundation
import XCTest

/// A user who is not root, for what reqtop must do for most people: CI runs as root, where a
/// call that needs a capability (a socket option, a file in a root-only place) works and a
/// defect stays hidden. As root, the tests run the binary as `nobody` through `setpriv`, and
/// plant files and folders as `nobody` with `chown`.
enum UnprivilegedUser {
    static let uid: uid_t = 65534
    static let gid: gid_t = 65534

    static var isRoot: Bool { geteuid() == 0 }

    static let setprivArguments = ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--"]

    /// A copy of the binary `nobody` can run wherever the build folder is (a clone in a
    /// folder only root may enter).
    static func binary() throws -> String {
        try copied.withLock { path in
            if let path { return path }
            let folder = NSTemporaryDirectory() + "reqtop-unprivileged-\(getpid())"
            try? FileManager.default.removeItem(atPath: folder)
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            let made = folder + "/reqtop"
            try FileManager.default.copyItem(atPath: CommandLineTests.binary.path, toPath: made)
            chmod(made, 0o755)
            path = made
            return made
        }
    }
    private static let copied = LockedPath()

    /// Gives `path` to `nobody`, as if that user had made it.
    static func plant(_ path: String) throws {
        guard lchown(path, uid, gid) == 0 else {
            throw XCTSkip("cannot give \(path) to another user (\(String(cString: strerror(errno))))")
        }
    }

    /// Skips a test that needs another user's files unless the tests run as root.
    static func requireRoot() throws {
        guard isRoot else { throw XCTSkip("needs root to plant files as another user (CI runs as root)") }
    }
}

/// The copied binary's path behind a lock (tests run in parallel).
final class LockedPath: @unchecked Sendable {
    // @unchecked: its one field is read and written only under `lock`.
    private let lock = NSLock()
    private var path: String?

    func withLock<T>(_ body: (inout String?) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&path)
    }
}
