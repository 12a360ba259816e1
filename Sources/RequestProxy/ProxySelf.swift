#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Where this proxy listens, to refuse a request aimed at the proxy itself (it would come
/// back to it, again and again). Compared by address, not by spelling: `127.1`,
/// `2130706433`, `0x7f000001` and `[::ffff:127.0.0.1]` are all 127.0.0.1 to the resolver
/// that would connect, and a proxy bound to every address is reached by each of the
/// machine's own addresses and names.
struct ProxySelf: Sendable {
    let port: Int
    /// The addresses a connection to ``port`` reaches this proxy by (IPv4 as 4 bytes, IPv6 as
    /// 16; an IPv4-mapped IPv6 address as its IPv4).
    let addresses: Set<[UInt8]>
    /// Names that resolve to this machine without asking anyone (lower case).
    let names: Set<String>
    /// Listening on loopback: any 127.0.0.0/8 address reaches it on Linux.
    private let onLoopback: Bool

    static let none = ProxySelf(host: "", port: 0)

    /// The proxy bound to `host` (an address or a name) and `port`.
    init(host: String, port: Int) {
        self.port = port
        var names: Set<String> = ["localhost"]
        if let hostName = Self.hostName() { names.insert(hostName.lowercased()) }
        var addresses: Set<[UInt8]> = [[127, 0, 0, 1], Self.loopbackV6]
        let bound = Self.address(host)
        let wildcard = bound == [0, 0, 0, 0] || bound == [UInt8](repeating: 0, count: 16)
        if wildcard {
            addresses.formUnion(Self.interfaceAddresses())
            addresses.insert([0, 0, 0, 0])
            addresses.insert([UInt8](repeating: 0, count: 16))
        } else if let bound {
            addresses.insert(bound)
        } else if !host.isEmpty {
            names.insert(host.lowercased())
        }
        self.addresses = addresses
        self.names = names
        onLoopback = wildcard || bound == nil || bound?.first == 127 || bound == Self.loopbackV6
    }

    /// Whether a request to `host:port` would reach this proxy.
    func isReached(host: String, port: Int) -> Bool {
        guard port == self.port, self.port != 0 else { return false }
        var host = host.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.hasSuffix(".") { host = String(host.dropLast()) }
        if let address = Self.address(host) {
            // The whole of 127.0.0.0/8 is this machine's loopback.
            if onLoopback, address.count == 4, address[0] == 127 { return true }
            return addresses.contains(address)
        }
        return names.contains(host) || host.hasSuffix(".localhost")
    }

    private static let loopbackV6: [UInt8] = [UInt8](repeating: 0, count: 15) + [1]

    /// `text` read as an address the way a resolver reads it (inet_aton's forms for IPv4:
    /// `127.1`, `2130706433`, `0x7f000001`), nil for a name. An IPv4-mapped IPv6 address is its IPv4.
    static func address(_ text: String) -> [UInt8]? {
        guard !text.isEmpty else { return nil }
        var v4 = in_addr()
        if inet_aton(text, &v4) != 0 {
            return withUnsafeBytes(of: v4.s_addr) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }

    private static func hostName() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Every address of this machine's interfaces.
    private static func interfaceAddresses() -> Set<[UInt8]> {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var found: Set<[UInt8]> = []
        for entry in sequence(first: first, next: { $0.pointee.ifa_next }) {
            guard let address = entry.pointee.ifa_addr else { continue }
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                found.insert(address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                    withUnsafeBytes(of: v4.pointee.sin_addr.s_addr) { Array($0) }
                })
            case AF_INET6:
                found.insert(address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                    withUnsafeBytes(of: v6.pointee.sin6_addr) { Array($0) }
                })
            default:
                continue
            }
        }
        return found
    }
}
