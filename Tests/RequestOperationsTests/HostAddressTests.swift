import Foundation
import RequestOperations
import XCTest

/// An address as it is written beside a port or a scheme, and what counts as loopback: one
/// rule for the proxy, the endpoint and the command line.
final class HostAddressTests: XCTestCase {
    func testAnIPv6AddressIsBracketedOnceAndANameIsLeftAsItIs() {
        XCTAssertEqual(HostAddress.authority("::1", port: 8080), "[::1]:8080")
        XCTAssertEqual(HostAddress.authority("[::1]", port: 8080), "[::1]:8080", "bracketed once")
        XCTAssertEqual(HostAddress.authority("api.example.com", port: 443), "api.example.com:443")
        XCTAssertEqual(HostAddress.bracketed("fe80::1%eth0"), "[fe80::1%eth0]")
        XCTAssertEqual(HostAddress.bracketed("127.0.0.1"), "127.0.0.1")
    }

    func testLoopbackIsThisMachinesAddressesAndNameOnly() {
        for host in ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LocalHost"] {
            XCTAssertTrue(HostAddress.isLoopback(host), host)
        }
        for host in ["0.0.0.0", "::", "10.0.0.7", "localhost.example.com", "128.0.0.1"] {
            XCTAssertFalse(HostAddress.isLoopback(host), host)
        }
    }

    /// A host key reads back: an IPv6 host's is bracketed (it was `::1:8080`, which no reader
    /// can split into host and port).
    func testAHostKeyOfAnIPv6URLIsBracketed() {
        XCTAssertEqual(HostKey(url: URL(string: "http://[::1]:8080/x"))?.description, "[::1]:8080")
        XCTAssertEqual(HostKey(url: URL(string: "https://API.example.com/x"))?.description, "api.example.com:443")
    }
}
