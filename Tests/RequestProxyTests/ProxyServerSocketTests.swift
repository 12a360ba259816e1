import Foundation
import RequestProxy
import XCTest

/// The socket options a client's connection to the proxy has, read from the accepted socket
/// itself: the proxy runs in this process, so its descriptors are this process's.
final class ProxyServerSocketTests: XCTestCase {
    /// `TCP_NODELAY` is set once, on the listening socket, and each accepted socket inherits
    /// it: without it a request's head or an answer's end could wait out Nagle's delay.
    func testAnAcceptedConnectionHasNoDelay() throws {
        let proxy = try startProxy()
        let port = Int(proxy.server.port)
        let client = try XCTUnwrap(connectedSocket(port: port))
        defer { close(client) }
        var accepted: [Int32] = []
        let deadline = Date().addingTimeInterval(5)
        while accepted.isEmpty, Date() < deadline {
            accepted = Self.acceptedSockets(localPort: port)
            if accepted.isEmpty { usleep(20_000) }
        }
        XCTAssertEqual(accepted.count, 1, "the proxy's end of this one connection")
        for fd in accepted {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            XCTAssertEqual(getsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &value, &length), 0)
            XCTAssertEqual(value, 1, "TCP_NODELAY on the accepted socket")
        }
    }

    /// This process's TCP sockets bound to `localPort` that have a peer (accepted, not listening).
    private static func acceptedSockets(localPort: Int) -> [Int32] {
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return descriptors.compactMap(Int32.init).filter { fd in
            var local = sockaddr_in(), peer = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size), peerLength = length
            let named = withUnsafeMutablePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
            }
            guard named, local.sin_family == sa_family_t(AF_INET), Int(UInt16(bigEndian: local.sin_port)) == localPort else { return false }
            return withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &peerLength) == 0 }
            }
        }
    }
}
