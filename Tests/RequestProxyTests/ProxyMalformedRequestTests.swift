import FaultServer
import Foundation
import RequestOperations
@testable import RequestProxy
import XCTest

/// A request the proxy cannot read is answered with what was wrong with it (in the body and in
/// `Proxy-Status`), its connection closed, and nothing of it sent on: the person whose client
/// wrote it reads why, where NIO's own handler answered a bare `400` with no body.
final class ProxyMalformedRequestTests: XCTestCase {
    func testAMalformedRequestIsToldWhatWasWrongAndGoesNoFurther() throws {
        let upstream = try startFaultServer()
        let proxy = try startProxy()
        let target = upstream.baseURL.absoluteString
        let cases: [(name: String, bytes: [UInt8], status: Int, words: String)] = [
            ("a request line that is not HTTP", Array("GARBAGE\r\n\r\n".utf8), 400, "its method is not a token"),
            ("a TLS hello on the plain port", [0x16, 0x03, 0x01, 0x02, 0x00] + [UInt8](repeating: 0, count: 100), 400, "its method is not a token"),
            ("a space in a field's name", Array("GET \(target)/status/200 HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n".utf8), 400,
             "its head has a character HTTP does not allow there"),
            ("an unknown version", Array("GET \(target)/status/200 HTTP/9.x\r\nHost: x\r\n\r\n".utf8), 400, "its HTTP version is not one the proxy speaks"),
            // Its head is whole: its operation may have begun (it is cancelled), unlike the others'.
            ("bad chunking", Array("POST \(target)/echo?chunks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nabc\r\n".utf8), 400,
             "a chunk's size is not a hexadecimal number"),
            ("two lengths", Array("POST \(target)/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd".utf8), 400,
             "it has more than one Content-Length"),
            ("a length beside chunking", Array("POST \(target)/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".utf8),
             400, "its framing or a line's end is not HTTP/1.1's"),
            ("a head past NIO's limit", Array("GET \(target)/status/200 HTTP/1.1\r\nHost: x\r\nX-Big: ".utf8)
                + [UInt8](repeating: UInt8(ascii: "a"), count: 200_000) + Array("\r\n\r\n".utf8), 431, "its head is larger than the proxy reads"),
        ]
        for (name, bytes, status, words) in cases {
            let answer = rawExchange(port: proxy.server.port, bytes)
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 \(status) "), "\(name): \(answer.prefix(300))")
            XCTAssertTrue(answer.contains("Proxy-Status: reqtop; error=http_request_error; details=\"the request could not be read: \(words)"),
                          "\(name): \(answer.prefix(400))")
            XCTAssertTrue(answer.contains("\r\n\r\nreqtop proxy: the request could not be read: \(words)"), "\(name): \(answer.prefix(400))")
            XCTAssertTrue(answer.contains("Connection: close\r\n"), "\(name): \(answer.prefix(400))")
        }
        // Behind a good request on the same connection: that one is answered first, whole.
        let pipelined = rawExchange(port: proxy.server.port, Array("GET \(target)/status/200?first HTTP/1.1\r\nHost: x\r\n\r\nGARBAGE\r\n\r\n".utf8))
        let parts = pipelined.components(separatedBy: "HTTP/1.1 ")
        XCTAssertEqual(parts.count, 3, pipelined)
        XCTAssertTrue(parts.dropFirst().first?.hasPrefix("200 OK") == true && parts[1].hasSuffix("status 200\n"), pipelined)
        XCTAssertTrue(parts.last?.hasPrefix("400 Bad Request") == true, pipelined)
        // No malformed head was sent on: each is a row with no method or target that says the
        // proxy refused it (ProxyRefusalRowTests), seven here and the pipelined one. The good
        // one was sent, and the one whose body broke may have been (its head came whole; it
        // was cancelled, nothing answered).
        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        let queued = proxy.events.events.compactMap { event -> String? in
            if case .queued(_, let url, _, _, _, _) = event.payload { url } else { nil }
        }
        XCTAssertTrue(queued.contains(target + "/status/200?first"), "\(queued)")
        XCTAssertEqual(Set(queued).subtracting([target + "/status/200?first", target + "/echo?chunks", ""]), [], "\(queued)")
        XCTAssertEqual(queued.filter(\.isEmpty).count, 8, "\(queued)")
        let sent = Set(proxy.events.events.filter { if case .sent = $0.payload { true } else { false } }.map(\.operationID))
        let unread = Set(proxy.events.events.filter { if case .queued(_, "", _, _, _, _) = $0.payload { true } else { false } }.map(\.operationID))
        XCTAssertTrue(sent.isDisjoint(with: unread), "a request the proxy could not read is never sent")
    }
}
