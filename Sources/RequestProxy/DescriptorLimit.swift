#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's limit on open files, which bounds the proxy's connections: each client's
/// connection takes a descriptor, and its upstream connection another.
public enum DescriptorLimit {
    /// Descriptors kept back for everything else (the listener, recordings, the terminal,
    /// NIO's own, the upstream pool's idle connections).
    static let reserve = 64

    /// Raises the soft limit to the hard one (a user may; the default soft 1,024 cut a proxy
    /// off at about 500 clients), and says the limit now in force.
    @discardableResult
    public static func raiseToHard() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur > rlim_t(Int32.max) ? Int(Int32.max) : Int(limit.rlim_cur)
    }

    /// How many client connections `descriptors` open files carry: two each (the client's and
    /// its upstream's), less ``reserve``; at least 16.
    public static func connectionCap(descriptors: Int) -> Int {
        max(16, (descriptors - reserve) / 2)
    }
}
