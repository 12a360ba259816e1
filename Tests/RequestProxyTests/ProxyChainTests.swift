import NIOCore
import NIOEmbedded
@testable import RequestProxy
import XCTest

/// The `CONNECT` the proxy sends a chained proxy (`reqtop proxy --proxy`), and what it makes
/// of the answer: a 2xx opens the tunnel and hands on bytes the host sent right behind it (a
/// server that speaks first, as SSH does); anything else fails with the proxy's status line.
final class ProxyChainTests: XCTestCase {
    /// A channel with the handler that sends `CONNECT example.com:443` to `corp:3128`, and
    /// what it answers once it does.
    private func startConnect(authorization: String? = nil) throws -> (channel: EmbeddedChannel, result: () -> Result<ByteBuffer?, Error>?) {
        let channel = EmbeddedChannel()
        let answered = channel.eventLoop.makePromise(of: ByteBuffer?.self)
        nonisolated(unsafe) var result: Result<ByteBuffer?, Error>?
        answered.futureResult.whenComplete { result = $0 }
        try channel.pipeline.syncOperations.addHandler(ChainedConnectHandler(authority: "example.com:443", authorization: authorization,
                                                                                proxy: "corp:3128", answered: answered))
        return (channel, { result })
    }

    private func connect(_ answer: String, authorization: String? = nil) throws -> (sent: String, result: Result<ByteBuffer?, Error>?) {
        let (channel, result) = try startConnect(authorization: authorization)
        let sent = try channel.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) } ?? ""
        // In two parts: the head may come split.
        let cut = answer.index(answer.startIndex, offsetBy: min(10, answer.count))
        try channel.writeInbound(ByteBuffer(string: String(answer[..<cut])))
        try channel.writeInbound(ByteBuffer(string: String(answer[cut...])))
        _ = try? channel.finish()
        return (sent, result())
    }

    func testA200OpensTheTunnelAndBytesBehindItAreHandedOn() throws {
        let (sent, result) = try connect("HTTP/1.1 200 Connection established\r\nVia: corp\r\n\r\nSSH-2.0-OpenSSH\r\n",
                                         authorization: "Basic dTpw")
        XCTAssertEqual(sent, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nProxy-Authorization: Basic dTpw\r\n\r\n")
        let early = try XCTUnwrap(result).get()
        XCTAssertEqual(early.map { String(buffer: $0) }, "SSH-2.0-OpenSSH\r\n")
    }

    func testARefusalIsNamedWithTheProxysStatusLine() throws {
        let (sent, result) = try connect("HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
        XCTAssertFalse(sent.contains("Proxy-Authorization"), "no credentials were given")
        XCTAssertThrowsError(try XCTUnwrap(result).get()) { error in
            XCTAssertEqual("\(error)", "the chained proxy corp:3128 refused the tunnel: HTTP/1.1 407 Proxy Authentication Required")
        }
    }

    func testGarbageIsNoAnswer() throws {
        let (_, result) = try connect("SSH-2.0-OpenSSH\r\n\r\n")
        XCTAssertThrowsError(try XCTUnwrap(result).get()) { error in
            XCTAssertTrue("\(error)".contains("did not answer CONNECT in HTTP"), "\(error)")
        }
    }

    func testTheChainsCredentialsComeFromItsURLAndTheDefaultPortIs80() throws {
        let chain = try XCTUnwrap(ProxyChain(url: URL(string: "http://us%40er:p%3Ass@corp.example")!))
        XCTAssertEqual(chain.port, 80)
        XCTAssertEqual(chain.authorization, "Basic " + Data("us@er:p:ss".utf8).base64EncodedString())
        XCTAssertEqual(chain.name, "corp.example:80")
        XCTAssertNil(ProxyChain(url: URL(string: "http:///nohost")!))
    }

    /// A chained proxy that takes the connection and never answers fails the tunnel in 10 s
    /// (the client gets its 502), not never.
    func testAChainedProxyThatNeverAnswersIsGivenUpOn() throws {
        let (channel, result) = try startConnect()
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        XCTAssertNil(result(), "still waiting")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        XCTAssertThrowsError(try XCTUnwrap(result()).get()) { error in
            XCTAssertEqual("\(error)", "the chained proxy corp:3128 did not answer CONNECT in 10 s")
        }
        _ = try? channel.finish()
    }

    /// A client's `CONNECT` target is written into the chained proxy's request line: one that
    /// carries a line break, a tab or a space is no authority.
    func testAnAuthorityWithWhitespaceOrControlBytesIsRefused() {
        XCTAssertNil(ProxyTarget.authority("evil.example\r\nX-Injected: yes:443"))
        XCTAssertNil(ProxyTarget.authority("evil.example\t:443"))
        XCTAssertNil(ProxyTarget.authority("evil\u{7F}.example:443"))
        XCTAssertEqual(ProxyTarget.authority("Example.com:443")?.0, "example.com")
        XCTAssertEqual(ProxyTarget.authority("[::1]:8443")?.1, 8443)
    }
}
