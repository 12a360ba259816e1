#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The few POSIX socket calls the endpoint needs, with errors that say which call failed.
/// Written by hand: SwiftNIO is the fault server's dependency, and the engine's endpoint
/// must not pull it into every program that embeds the library.
enum UnixSocket {
    struct Failure: Error, CustomStringConvertible {
        var call: String
        var path: String
        var code: Int32
        var description: String { "\(call) \(path): \(String(cString: strerror(code)))" }
    }

    /// A `sockaddr_un` for `path` (which must fit its 108 bytes).
    private static func address(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { throw Failure(call: "socket path too long", path: path, code: ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    private static func streamSocket() -> Int32 {
        #if canImport(Glibc)
        socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
    }

    /// A listening socket at `path` (an old file there is replaced), readable by the owner only.
    static func listen(at path: String) throws -> Int32 {
        var address = try address(path)
        unlink(path)
        let fd = streamSocket()
        guard fd >= 0 else { throw Failure(call: "socket", path: path, code: errno) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        // Not umask: it is per process, and a library must not change the modes of files
        // other threads create meanwhile. The folder is 0700, so the moment before chmod
        // exposes nothing.
        guard bound == 0, chmod(path, 0o600) == 0 else {
            let code = errno
            close(fd)
            throw Failure(call: "bind", path: path, code: code)
        }
        guard Glibc.listen(fd, 16) == 0 else {
            let code = errno
            close(fd)
            throw Failure(call: "listen", path: path, code: code)
        }
        setNonBlocking(fd)
        return fd
    }

    /// A connected socket to `path` (blocking), only to a process of this user's: a socket
    /// another user's process serves (a fake endpoint planted where reqtop looks) is refused
    /// before a byte is read from it.
    static func connect(to path: String) throws -> Int32 {
        let fd = try connectAnyone(to: path)
        let me = getuid()
        guard let peer = peerUserID(fd), peer == me else {
            let peer = peerUserID(fd)
            close(fd)
            throw PeerRefused(path: path, peer: peer)
        }
        return fd
    }

    /// The process at a socket runs as another user.
    struct PeerRefused: Error, CustomStringConvertible {
        var path: String
        var peer: uid_t?
        var description: String {
            "\(path) is served by \(peer.map { "another user's process (uid \($0))" } ?? "a process whose user cannot be told"); "
                + "reqtop attaches only to programs of its own user (uid \(getuid()))"
        }
    }

    private static func connectAnyone(to path: String) throws -> Int32 {
        var address = try address(path)
        let fd = streamSocket()
        guard fd >= 0 else { throw Failure(call: "socket", path: path, code: errno) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw Failure(call: "connect", path: path, code: code)
        }
        return fd
    }

    static func setNonBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    /// The user id of the process at the other end (SO_PEERCRED), nil when unknown.
    static func peerUserID(_ fd: Int32) -> uid_t? {
        #if canImport(Glibc)
        // `struct ucred` needs _GNU_SOURCE, which Glibc's module map does not set: the same
        // layout (pid, uid, gid), declared here.
        struct PeerCredentials { var pid: pid_t = 0; var uid: uid_t = 0; var gid: gid_t = 0 }
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return nil }
        return credentials.uid
        #else
        var uid = uid_t(), gid = gid_t()
        return getpeereid(fd, &uid, &gid) == 0 ? uid : nil
        #endif
    }

    /// Writes what it can without blocking; returns the bytes written, 0 when the socket
    /// is full, nil when the peer is gone. Never raises SIGPIPE.
    static func writeSome(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int? {
        let written = sendWithoutSignal(fd, bytes)
        if written >= 0 { return written }
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : nil
    }

    /// Writes from a blocking socket, retrying on EINTR; nil when the peer is gone.
    static func writeBlocking(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int? {
        while true {
            let written = sendWithoutSignal(fd, bytes)
            if written >= 0 { return written }
            if errno != EINTR { return nil }
        }
    }

    /// `send` that reports a closed peer as EPIPE instead of killing the process with SIGPIPE.
    private static func sendWithoutSignal(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        #if canImport(Glibc)
        send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        #else
        send(fd, bytes.baseAddress, bytes.count, 0)
        #endif
    }
}
