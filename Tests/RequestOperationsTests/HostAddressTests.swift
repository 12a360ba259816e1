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

    /// A `Host` value names a URL when host and port agree, in any case, the scheme's port
    /// written or not; the field a URL gives carries its port only when it is not the scheme's.
    func testAHostFieldNamesAURLByHostAndPort() throws {
        let url = try XCTUnwrap(URL(string: "http://Shop.example/cart"))
        for value in ["shop.example", "SHOP.example:80", " shop.example "] {
            XCTAssertTrue(HostAddress.names(value, url: url), value)
        }
        for value in ["shop.example:8080", "other.example", "shop.example:", "shop.example:x", ""] {
            XCTAssertFalse(HostAddress.names(value, url: url), value)
        }
        let v6 = try XCTUnwrap(URL(string: "https://[::1]:8443/"))
        XCTAssertTrue(HostAddress.names("[::1]:8443", url: v6))
        XCTAssertFalse(HostAddress.names("[::1]", url: v6), "443 is not 8443")
        XCTAssertEqual(HostAddress.hostField(for: v6), "[::1]:8443")
        XCTAssertEqual(HostAddress.hostField(for: try XCTUnwrap(URL(string: "https://api.example:443/x"))), "api.example")
        XCTAssertEqual(HostAddress.hostField(for: try XCTUnwrap(URL(string: "http://shop.example:80/"))), "shop.example")
        XCTAssertEqual(HostAddress.hostField(for: try XCTUnwrap(URL(string: "http://shop.example:8080/"))), "shop.example:8080")
        XCTAssertEqual(HostAddress.withoutDerivedHost(["Host": "shop.example", "Accept": "*/*"], url: "http://shop.example/"), ["Accept": "*/*"])
        XCTAssertEqual(HostAddress.withoutDerivedHost(["host": "shop.example"], url: "http://10.0.0.7/"), ["host": "shop.example"],
                       "a virtual host on an address is the request's own")
    }

    /// A host key reads back: an IPv6 host's is bracketed (it was `::1:8080`, which no reader
    /// can split into host and port).
    func testAHostKeyOfAnIPv6URLIsBracketed() {
        XCTAssertEqual(HostKey(url: URL(string: "http://[::1]:8080/x"))?.description, "[::1]:8080")
        XCTAssertEqual(HostKey(url: URL(string: "https://API.example.com/x"))?.description, "api.example.com:443")
    }
}
