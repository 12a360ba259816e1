#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Removes endpoint sockets when the process exits without stopping them (`exit()`).
enum SocketCleanup {
    private static let paths = Mutex<Set<String>>([])
    private static let registered = Mutex(false)

    static func add(_ path: String) {
        paths.withLock { _ = $0.insert(path) }
        let first = registered.withLock { registered -> Bool in
            defer { registered = true }
            return !registered
        }
        if first { atexit { SocketCleanup.removeAll() } }
    }

    static func remove(_ path: String) {
        paths.withLock { _ = $0.remove(path) }
    }

    static func removeAll() {
        for path in paths.withLock({ $0 }) { unlink(path) }
    }
}
