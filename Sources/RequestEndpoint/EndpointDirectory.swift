#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Where monitor endpoints listen: one socket per process, named by its pid, in a folder
/// only its user can enter: `$XDG_RUNTIME_DIR/reqtop` when that is set, else
/// `<temporary directory>/reqtop-<uid>`.
public enum EndpointDirectory {
    /// The folder for this user (not created).
    public static var path: String {
        if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return (runtime as NSString).appendingPathComponent("reqtop")
        }
        return (NSTemporaryDirectory() as NSString).appendingPathComponent("reqtop-\(getuid())")
    }

    /// The socket of process `pid`.
    public static func socketPath(pid: Int32, in directory: String = path) -> String {
        (directory as NSString).appendingPathComponent("\(pid).sock")
    }

    /// Why the folder cannot be used.
    public struct UnsafeDirectory: Error, CustomStringConvertible {
        public var description: String
    }

    /// Creates the folder 0700, or checks that an existing one is ours and 0700 (a folder
    /// another user made, or that others can enter, is refused: they could replace sockets).
    public static func prepare(_ directory: String = path) throws {
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw UnsafeDirectory(description: "cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(directory, &info) == 0 else {
            throw UnsafeDirectory(description: "cannot read \(directory): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { throw UnsafeDirectory(description: "\(directory) is not a folder") }
        guard info.st_uid == getuid() else { throw UnsafeDirectory(description: "\(directory) belongs to another user (uid \(info.st_uid))") }
        if info.st_mode & 0o077 != 0 {
            guard chmod(directory, 0o700) == 0 else {
                throw UnsafeDirectory(description: "\(directory) is open to other users and cannot be closed")
            }
        }
    }

    /// Throws, naming the problem, unless `directory` is a folder (not a link) of this user's
    /// that no one else may enter: what `attach` checks before it lists or connects to a
    /// socket there. Another user who made the folder first could serve a fake endpoint in it.
    /// It changes nothing (the program that listens makes and closes the folder).
    public static func checkForAttaching(_ directory: String = path) throws {
        var info = stat()
        guard lstat(directory, &info) == 0 else {
            throw UnsafeDirectory(description: "cannot read \(directory): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) != S_IFLNK else {
            throw UnsafeDirectory(description: "\(directory) is a symbolic link; reqtop attaches only through a folder of its user's (remove the link)")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { throw UnsafeDirectory(description: "\(directory) is not a folder") }
        guard info.st_uid == getuid() else {
            throw UnsafeDirectory(description: "\(directory) belongs to another user (uid \(info.st_uid)); its endpoints are not to be trusted (remove it)")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw UnsafeDirectory(description: "\(directory) is open to other users (mode \(String(info.st_mode & 0o777, radix: 8))); anyone could have put an endpoint there (chmod 700 it)")
        }
        guard access(directory, R_OK | X_OK) == 0 else {
            throw UnsafeDirectory(description: "cannot enter \(directory): \(String(cString: strerror(errno)))")
        }
    }

    /// The sockets in the folder, with the pid each is named by.
    public static func sockets(in directory: String = path) -> [(pid: Int32, path: String)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.compactMap { name -> (Int32, String)? in
            guard name.hasSuffix(".sock"), let pid = Int32(name.dropLast(5)) else { return nil }
            return (pid, (directory as NSString).appendingPathComponent(name))
        }.sorted { $0.0 < $1.0 }
    }

    /// True when process `pid` exists (a socket of a process that is gone can be removed).
    public static func isAlive(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }
}
