import FaultServer
import Foundation
import RequestProxy
import XCTest

/// HTTP/1.0 clients that ask to keep their connection (`Connection: keep-alive`): an answer
/// with a length is marked persistent and the connection kept; one of no known length ends
/// with the close (1.0 has no chunks).
final class ProxyKeepAliveTests: XCTestCase {
    func testApacheBenchKeepAliveCompletesEveryRequest() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/ab") else {
            throw XCTSkip("ab (apache2-utils) is not installed; .ci/run installs it")
        }
        let upstream = try startFaultServer()
        let proxy = try startProxy()
        // ab speaks HTTP/1.0; -k asks for keep-alive.
        let result = try run("/usr/bin/ab", ["-q", "-k", "-n", "2000", "-c", "8", "-s", "10", "-X", "127.0.0.1:\(proxy.server.port)",
                                              upstream.baseURL.absoluteString + "/status/200"], timeout: 120)
        XCTAssertTrue(result.stdout.contains("Complete requests:      2000"), result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("Failed requests:        0"), result.stdout)
        XCTAssertTrue(result.stdout.contains("Keep-Alive requests:    2000"), result.stdout)
    }

    func testAnHTTP10AnswerOfNoKnownLengthEndsWithTheCloseNotChunks() throws {
        let upstream = try startFaultServer()
        let proxy = try startProxy()
        let url = upstream.baseURL.absoluteString
        // /gzip/N?chunked=1 is sent without a length: the 1.0 client gets the bytes, then the close.
        let started = Date()
        let streamed = rawExchange(port: proxy.server.port, Array("GET \(url)/gzip/300?chunked=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".utf8), wait: 10)
        XCTAssertTrue(streamed.hasPrefix("HTTP/1.0 200"), streamed)
        XCTAssertFalse(streamed.lowercased().contains("transfer-encoding"), streamed)
        XCTAssertTrue(streamed.contains("Connection: close"), streamed)
        let direct = try run(curl, ["-s", url + "/gzip/300?chunked=1"])
        XCTAssertEqual(streamed.components(separatedBy: "\r\n\r\n").last?.utf8.count, direct.stdout.utf8.count, "every byte, unchunked")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "closed after the answer, not left open")
        // With a length: marked persistent, and the connection stays for a second request.
        let lengths = rawExchange(port: proxy.server.port, Array(("GET \(url)/status/200 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
            + "GET \(url)/status/201 HTTP/1.0\r\n\r\n").utf8), wait: 10)
        XCTAssertTrue(lengths.hasPrefix("HTTP/1.0 200"), lengths)
        XCTAssertTrue(lengths.contains("Connection: keep-alive"), lengths)
        XCTAssertTrue(lengths.contains("HTTP/1.0 201"), "the kept connection served the next request: \(lengths)")
    }

    /// A kept-alive connection with nothing under way is closed at the proxy's idle limit, not
    /// left open; an answer that takes longer than the limit is not cut.
    func testAnIdleKeptConnectionIsClosedAtTheIdleLimit() throws {
        let upstream = try startFaultServer()
        var options = ProxyOptions()
        options.idleTimeout = 1
        let proxy = try startProxy(options)
        let url = upstream.baseURL.absoluteString
        var started = Date()
        let answer = rawExchange(port: proxy.server.port, Array("GET \(url)/status/200 HTTP/1.1\r\nHost: x\r\n\r\n".utf8), wait: 20)
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 200"), answer)
        XCTAssertFalse(answer.contains("Connection: close"), "kept alive: \(answer)")
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 0.9, "not before the limit")
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "closed at the limit (1 s), not left open")
        // 2.5 s for the answer, twice the limit: relayed whole, then the close a second after.
        started = Date()
        let slow = rawExchange(port: proxy.server.port, Array("GET \(url)/delay/2500 HTTP/1.1\r\nHost: x\r\n\r\n".utf8), wait: 20)
        XCTAssertTrue(slow.hasPrefix("HTTP/1.1 200"), slow)
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 3.3, "the idle limit counted from the answer")
        XCTAssertLessThan(Date().timeIntervalSince(started), 12)
    }

    /// A finished request's operation and exchange are let go (the exchange held its
    /// operation, which holds the exchange as its answer's receiver: every request's pair was
    /// kept, 3.8 KiB each, all day): once the queue's recent table has dropped it, nothing holds it.
    func testAFinishedRequestIsLetGo() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/ab") else {
            throw XCTSkip("ab (apache2-utils) is not installed; .ci/run installs it")
        }
        let upstream = try startFaultServer()
        let proxy = try startProxy()
        let first = try run(curl, ["-s", "-x", proxy.url, upstream.baseURL.absoluteString + "/status/200"])
        XCTAssertEqual(first.stdout, "status 200\n")
        weak let operation = proxy.queue.operation(withID: "c1-r1")
        XCTAssertNotNil(operation)
        // More than the queue's recent table keeps (2,000, and as many more until it compacts).
        let more = try run("/usr/bin/ab", ["-q", "-k", "-n", "4300", "-c", "4", "-s", "10", "-X", "127.0.0.1:\(proxy.server.port)",
                                            upstream.baseURL.absoluteString + "/status/200"], timeout: 120)
        XCTAssertTrue(more.stdout.contains("Complete requests:      4300"), more.stdout + more.stderr)
        proxy.queue.events.waitUntilDelivered()
        XCTAssertNil(operation, "the first request's operation is still held")
    }
}
