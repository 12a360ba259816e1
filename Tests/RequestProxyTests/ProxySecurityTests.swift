import FaultServer
import Foundation
import NIOCore
@testable import RequestProxy
import XCTest

/// What a client may not make the proxy do: write headers of its choosing to an upstream
/// through an encoded target, loop back into the proxy from inside a tunnel, or use the proxy
/// as another user of this machine.
final class ProxySecurityTests: XCTestCase {
    func testAnEncodedLineBreakInAnUpgradesTargetStaysEncoded() throws {
        // Answers with the request line it was sent, then closes.
        let port = try startPythonServer("""
        import socket
        listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen(4)
        print(listener.getsockname()[1], flush=True)
        while True:
            connection, _ = listener.accept()
            head = b""
            while b"\\r\\n\\r\\n" not in head: head += connection.recv(4096)
            line = head.split(b"\\r\\n")[0]
            connection.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n%s" % (len(line), line))
            connection.close()
        """)
        let proxy = try startProxy()
        let answer = rawExchange(port: proxy.server.port, Array("""
            GET http://127.0.0.1:\(port)/chat%0d%0aX-Evil:%201?q=%0d%0a HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n
            """.utf8))
        XCTAssertTrue(answer.hasSuffix("GET /chat%0d%0aX-Evil:%201?q=%0d%0a HTTP/1.1"), answer)
    }

    func testAnAbsoluteURLInsideATunnelNamingTheProxyIsALoop() throws {
        let pki = try TestCertificates.make()
        addTeardownBlock { pki.remove() }
        let upstream = try startFaultServer(tls: pki)
        var options = ProxyOptions()
        options.authority = try LocalCertificateAuthority.loadOrMake(in: try temporaryFolder() + "/ca").0
        let proxy = try startProxy(options, trusting: pki.caFile)
        let script = """
        import socket, ssl, sys
        port, target, ca = int(sys.argv[1]), sys.argv[2], sys.argv[3]
        client = socket.create_connection(("127.0.0.1", port)); client.settimeout(10)
        client.sendall(f"CONNECT {target} HTTP/1.1\\r\\n\\r\\n".encode())
        answer = b""
        while b"\\r\\n\\r\\n" not in answer: answer += client.recv(4096)
        client = ssl.create_default_context(cafile=ca).wrap_socket(client, server_hostname="localhost")
        client.sendall(f"GET http://127.0.0.1:{port}/again HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n".encode())
        print(client.recv(4096).split(b"\\r\\n")[0].decode())
        """
        let result = try run("/usr/bin/python3", ["-c", script, String(proxy.server.port), "localhost:\(upstream.port)", options.authority!.certificateFile])
        XCTAssertEqual(result.stdout, "HTTP/1.1 508 Loop Detected\n", result.stderr)
    }

    func testAnotherUserOfThisMachineIsRefusedUnlessTheProxyTakesCredentials() throws {
        guard geteuid() == 0 else { throw XCTSkip("needs root to run curl as another user (CI runs as root)") }
        let upstream = try startFaultServer()
        let url = upstream.baseURL.absoluteString + "/status/200"
        let asNobody = ["--reuid=65534", "--regid=65534", "--clear-groups", "--", curl]
        let proxy = try startProxy()
        let refused = try run("/usr/bin/setpriv", asNobody + ["-s", "-i", "-x", proxy.url, url])
        XCTAssertTrue(refused.stdout.hasPrefix("HTTP/1.1 403"), refused.stdout)
        XCTAssertTrue(refused.stdout.contains("serves its own user only (uid 0), not uid 65534"), refused.stdout)
        XCTAssertEqual(try run(curl, ["-s", "-x", proxy.url, url]).stdout, "status 200\n", "its own user is served")
        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        XCTAssertTrue(proxy.events.operations().count == 1, "the refused request made no operation")
        // With credentials, whoever has them.
        var options = ProxyOptions()
        options.credentials = ProxyCredentials("team:s3cret")
        let shared = try startProxy(options)
        XCTAssertEqual(try run("/usr/bin/setpriv", asNobody + ["-s", "-U", "team:s3cret", "-x", shared.url, url]).stdout, "status 200\n")
    }

    /// A connection the kernel cannot place, on a machine that tells owners (the client left
    /// at once, a query that failed), is refused, not served to whoever it was; where the
    /// machine never tells (no sock_diag), it is served and the proxy says so at start.
    func testAConnectionWhoseOwnerCannotBeToldIsRefusedWhereOwnersAreTold() throws {
        let proxy = try startProxy()
        #if os(Linux)
        XCTAssertTrue(proxy.server.tellsClientOwners, "asked of its own listener")
        let refusal = try XCTUnwrap(proxy.server.context.refusal(of: nil))
        XCTAssertTrue(String(buffer: refusal).contains("the kernel did not say whose this connection is"), String(buffer: refusal))
        #endif
        proxy.server.context.ownersTold.store(false, ordering: .relaxed)
        XCTAssertNil(proxy.server.context.refusal(of: nil), "served where owners are never told")
        var options = ProxyOptions()
        options.credentials = ProxyCredentials("team:s3cret")
        XCTAssertNil(try startProxy(options).server.context.refusal(of: nil), "with credentials, whoever has them")
    }
}
