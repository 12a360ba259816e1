import Foundation
import Prometheus
@testable import ReqtopApplication
@testable import ReqtopCLI
import Synchronization
import XCTest

/// `--metrics` holds a bounded number of connections and lets idle ones go: before, 19,000
/// idle connections were held and, with descriptors exhausted, `reqtop attach` got no answer.
final class MetricsEndpointLimitTests: XCTestCase {
    private func connect(_ port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw POSIXError(.ECONNREFUSED) }
        return fd
    }

    /// True when the server closed `fd` (a read sees the end) within `timeout`.
    private func closedByServer(_ fd: Int32, within timeout: Int32) -> Bool {
        var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&poll, 1, timeout) == 1 else { return false }
        var byte: UInt8 = 0
        return read(fd, &byte, 1) == 0
    }

    private func scrape(_ port: Int) throws -> String {
        let fd = try connect(port)
        defer { close(fd) }
        let request = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        _ = request.withCString { write(fd, $0, strlen($0)) }
        var out = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            out.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: out, as: UTF8.self)
    }

    func testConnectionsPastTheLimitAreClosedAndTheProgramSaysSoOnce() throws {
        let notices = Mutex<[String]>([])
        let endpoint = try PrometheusEndpoint(host: "127.0.0.1", port: 0, registry: PrometheusCollectorRegistry(), maxConnections: 8,
                                              notice: { text in notices.withLock { $0.append(text) } })
        defer { endpoint.stop() }
        let fds = try (0..<20).map { _ in try connect(endpoint.port) }
        defer { fds.forEach { close($0) } }
        Thread.sleep(forTimeInterval: 1)
        let closed = fds.filter { closedByServer($0, within: 0) }.count
        XCTAssertEqual(closed, 12, "the 12 past the limit of 8 are closed")
        XCTAssertLessThanOrEqual(endpoint.openConnections, 8)
        XCTAssertEqual(notices.withLock { $0.count }, 1, "\(notices.withLock { $0 })")
        XCTAssert(notices.withLock { $0.first ?? "" }.contains("more than 8 connections"))
    }

    func testAnIdleConnectionIsClosedAndAScrapeStillAnswers() throws {
        let endpoint = try PrometheusEndpoint(host: "127.0.0.1", port: 0, registry: PrometheusCollectorRegistry(), maxConnections: 4,
                                              idleTimeout: .milliseconds(200), notice: { _ in })
        defer { endpoint.stop() }
        let idle = try (0..<4).map { _ in try connect(endpoint.port) }
        defer { idle.forEach { close($0) } }
        XCTAssert(idle.allSatisfy { closedByServer($0, within: 3_000) }, "idle connections are let go")
        XCTAssert(try scrape(endpoint.port).hasPrefix("HTTP/1.1 200"), "a scrape answers once the idle ones are gone")
    }
}
