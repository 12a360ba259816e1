import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Checks whether a host is reachable again, cheaply, without sending a request.
public protocol HostProbe: Sendable {
    /// Calls `completion` once, on any thread, with true when the host answered.
    func probe(_ host: HostKey, timeout: TimeInterval, completion: @escaping @Sendable (Bool) -> Void)
}

/// Opens (and at once closes) a TCP connection to the host: the lightest check that a
/// server is listening again. Runs the blocking resolve and connect on a background queue.
public struct TCPConnectProbe: HostProbe {
    public init() {}

    public func probe(_ host: HostKey, timeout: TimeInterval, completion: @escaping @Sendable (Bool) -> Void) {
        DispatchQueue.global(qos: .utility).async {
            completion(Self.connect(host: host.host, port: host.port, timeout: timeout))
        }
    }

    /// True when a TCP connection to `host:port` was established within `timeout`.
    static func connect(host: String, port: Int, timeout: TimeInterval) -> Bool {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if os(Linux)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        // Brackets of an IPv6 literal are URL syntax, not part of the address.
        let name = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard getaddrinfo(name, String(port), &hints, &list) == 0, let first = list else { return false }
        defer { freeaddrinfo(list) }

        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            if connectOne(info.pointee, timeoutMilliseconds: Int32(max(1, timeout * 1000))) { return true }
            candidate = info.pointee.ai_next
        }
        return false
    }

    private static func connectOne(_ info: addrinfo, timeoutMilliseconds: Int32) -> Bool {
        let fd = socket(info.ai_family, info.ai_socktype, info.ai_protocol)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let flags = fcntl(fd, F_GETFL, 0)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        if Glibc_connect(fd, info.ai_addr, info.ai_addrlen) == 0 { return true }
        guard errno == EINPROGRESS else { return false }
        var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard poll(&descriptor, 1, timeoutMilliseconds) == 1 else { return false }
        var socketError: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &socketError, &length) == 0 else { return false }
        return socketError == 0
    }
}

/// `connect` under a name that does not clash with the probe's own method.
private func Glibc_connect(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>!, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}

/// A host and port, the unit of early retry: `127.0.0.1:8080`.
public struct HostKey: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// The host of an http or https URL, with its default port when none is given.
    public init?(url: URL?) {
        guard let url, let host = url.host, !host.isEmpty else { return nil }
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        // Most hosts come in lower case: a new string only when one does not (#58).
        self.init(host: host.utf8.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") } ? host.lowercased() : host, port: port)
    }

    /// `host:port`, an IPv6 host in brackets (`[::1]:8080`): the events' `host`, the monitor's HOST.
    public var description: String { HostAddress.authority(host, port: port) }
}
