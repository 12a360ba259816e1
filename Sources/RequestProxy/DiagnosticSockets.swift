#if os(Linux)
import Glibc
import Synchronization

/// Netlink sockets for `sock_diag` queries (``ClientProgram``), kept for the next query.
///
/// Every accepted connection asks the kernel whose it is; a socket made and closed for each
/// query was two of the ~31 system calls a proxied request makes under a client that opens a
/// connection a request (#58). A socket is kept only after a clean exchange — its one answer
/// read, with the query's own sequence number — so no late answer waits in it for the next.
enum DiagnosticSockets {
    private static let idle = Mutex<[Int32]>([])
    private static let sequence = Atomic<UInt32>(0)

    /// At most this many are kept (one for each of the loops asking at once is enough).
    static let kept = 4

    /// A socket to ask on: a kept one, or a new one; nil when the kernel gives none.
    static func take() -> Int32? {
        if let kept = idle.withLock({ $0.popLast() }) { return kept }
        let fd = socket(AF_NETLINK, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 4 /* NETLINK_SOCK_DIAG */)
        return fd >= 0 ? fd : nil
    }

    /// The number for the next query: its answer carries it back.
    static func nextSequence() -> UInt32 {
        sequence.add(1, ordering: .relaxed).newValue
    }

    /// `fd` answered its query cleanly: kept for the next one, or closed if enough are kept.
    static func giveBack(_ fd: Int32) {
        let keptIt = idle.withLock { list -> Bool in
            guard list.count < kept else { return false }
            list.append(fd)
            return true
        }
        if !keptIt { close(fd) }
    }

    /// `fd` failed, or may still get an answer late: closed, not kept.
    static func discard(_ fd: Int32) {
        close(fd)
    }
}
#endif
