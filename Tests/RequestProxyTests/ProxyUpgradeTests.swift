import FaultServer
import Foundation
import RequestProxy
import XCTest

/// An `Upgrade` request (a WebSocket) through the proxy: the head goes on to the upstream,
/// its `101` comes back, and then bytes pass both ways — plain (ws) and inside an intercepted
/// tunnel (wss, the upstream's certificate verified).
final class ProxyUpgradeTests: XCTestCase {
    /// A Python upstream that answers an upgrade with 101 and then echoes what it reads, and a
    /// Python client that upgrades through the proxy, sends a line and prints what came back.
    private let script = """
    import socket, ssl, sys, threading
    mode, proxy_port, proxy_ca, server_cert, server_key = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen(4)
    port = listener.getsockname()[1]
    def serve():
        connection, _ = listener.accept()
        if mode.startswith("wss"):
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); context.load_cert_chain(server_cert, server_key)
            connection = context.wrap_socket(connection, server_side=True)
        head = b""
        while b"\\r\\n\\r\\n" not in head: head += connection.recv(4096)
        sys.stderr.write("upstream saw: " + head.decode().split("\\r\\n")[0] + "\\n")
        sys.stderr.write("upstream host: " + ",".join(l for l in head.decode().split("\\r\\n") if l.lower().startswith("host:")) + f" (port {port})\\n")
        connection.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\\r\\n")
        while True:
            data = connection.recv(4096)
            if not data: break
            connection.sendall(data)
    threading.Thread(target=serve, daemon=True).start()
    client = socket.create_connection(("127.0.0.1", proxy_port)); client.settimeout(10)
    if mode.startswith("wss"):
        client.sendall(f"CONNECT localhost:{port} HTTP/1.1\\r\\nHost: localhost:{port}\\r\\n\\r\\n".encode())
        answer = b""
        while b"\\r\\n\\r\\n" not in answer: answer += client.recv(4096)
        context = ssl.create_default_context(cafile=proxy_ca)
        client = context.wrap_socket(client, server_hostname="localhost")
        target = "/chat?room=1"
    else:
        target = f"http://127.0.0.1:{port}/chat?room=1"
    client.sendall(f"GET {target} HTTP/1.1\\r\\nHost: localhost:{port}\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Version: 13\\r\\n\\r\\n".encode())
    answer = b""
    while b"\\r\\n\\r\\n" not in answer: answer += client.recv(4096)
    print(answer.split(b"\\r\\n")[0].decode())
    if b" 101 " not in answer.split(b"\\r\\n")[0]:
        while True:
            more = client.recv(4096)
            if not more: break
            answer += more
        print(answer.decode(errors="replace").split("\\r\\n\\r\\n", 1)[1].strip())
        sys.exit(0)
    client.sendall(b"hello through the tunnel")
    echoed = b""
    while len(echoed) < 24: echoed += client.recv(4096)
    print(echoed.decode())
    """

    private func upgrade(_ mode: String, trusted: Bool = true, chain: ProxyChain? = nil) throws
        -> (status: Int32, stdout: String, stderr: String, proxy: ProxyUnderTest) {
        let pki = try TestCertificates.make(hosts: ["localhost", "127.0.0.1"])
        addTeardownBlock { pki.remove() }
        var options = ProxyOptions()
        options.chain = chain
        let folder = try temporaryFolder()
        options.authority = try LocalCertificateAuthority.loadOrMake(in: folder + "/ca").0
        let proxy = try startProxy(options, trusting: trusted ? pki.caFile : nil)
        let result = try run("/usr/bin/python3", ["-c", script, mode, String(proxy.server.port), options.authority!.certificateFile,
                                                  pki.serverCertificateFile, pki.serverKeyFile], timeout: 60)
        return (result.status, result.stdout, result.stderr, proxy)
    }

    func testAWebSocketUpgradeIsTunnelled() throws {
        let result = try upgrade("ws")
        XCTAssertEqual(result.stdout, "HTTP/1.1 101 Switching Protocols\nhello through the tunnel\n", result.stderr)
        XCTAssertTrue(result.stderr.contains("upstream saw: GET /chat?room=1 HTTP/1.1"), "origin-form to the upstream: \(result.stderr)")
        // The client's `Host: localhost` for a request to 127.0.0.1: the target's, in its place.
        let port = try XCTUnwrap(result.stderr.firstMatch(of: /\(port (\d+)\)/)?.1)
        XCTAssertTrue(result.stderr.contains("upstream host: Host: 127.0.0.1:\(port) ("), result.stderr)
        // The upgrade is a row: its request, and the bytes each way (24 echoed, plus the 101).
        let row = result.proxy.events.finished("c1-r1")
        guard case .queued(let method, let url, let headers, _, _, _)? = row.first?.payload else { return XCTFail("\(row)") }
        XCTAssertEqual(method, "GET")
        XCTAssertTrue(url.hasSuffix("/chat?room=1"), url)
        XCTAssertEqual(headers["Upgrade"], "websocket")
        let up = row.compactMap { event -> Int? in if case .uploaded(let bytes, _) = event.payload { bytes } else { nil } }.last
        XCTAssertEqual(up, 24, "the client's bytes after the head: \(row)")
    }

    func testASecureWebSocketUpgradeInsideAnInterceptedTunnel() throws {
        let result = try upgrade("wss")
        XCTAssertEqual(result.stdout, "HTTP/1.1 101 Switching Protocols\nhello through the tunnel\n", result.stderr)
        XCTAssertTrue(result.stderr.contains("upstream saw: GET /chat?room=1 HTTP/1.1"), result.stderr)
        let port = try XCTUnwrap(result.stderr.firstMatch(of: /\(port (\d+)\)/)?.1)
        XCTAssertTrue(result.stderr.contains("upstream host: Host: localhost:\(port) ("), "the client's, naming the tunnel's host: \(result.stderr)")
    }

    func testAnUpgradeToAnUpstreamWhoseCertificateIsRefusedIsA502NamingIt() throws {
        let result = try upgrade("wss", trusted: false)
        let lines = result.stdout.split(separator: "\n")
        XCTAssertEqual(lines.first, "HTTP/1.1 502 Bad Gateway", result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("failed: TLS certificate not trusted"), "the kind, read as the operations' is: \(result.stdout)")
        XCTAssertFalse(result.stderr.contains("upstream saw"), "nothing was sent to an upstream the proxy could not verify")
    }

    /// A chained proxy (`--proxy`) carries upgrades too: the proxy opens a CONNECT to the
    /// upstream through it, then sends the upgrade's head inside, and the bytes pass both ways.
    func testAnUpgradeGoesThroughAChainedProxy() throws {
        let folder = try temporaryFolder()
        let seen = folder + "/chain.log"
        let port = try startPythonServer(chainedProxy(log: seen))
        let chain = try XCTUnwrap(ProxyChain(url: URL(string: "http://127.0.0.1:\(port)")!))
        let result = try upgrade("ws", chain: chain)
        XCTAssertEqual(result.stdout, "HTTP/1.1 101 Switching Protocols\nhello through the tunnel\n", result.stderr)
        XCTAssertTrue(result.stderr.contains("upstream saw: GET /chat?room=1 HTTP/1.1"), result.stderr)
        let log = (try? String(contentsOfFile: seen, encoding: .utf8)) ?? ""
        XCTAssertTrue(log.hasPrefix("CONNECT 127.0.0.1:"), "the upgrade went through the chained proxy: \(log)")
    }

    /// A Python CONNECT-only proxy on loopback that writes each CONNECT line to `log` and
    /// relays the tunnel's bytes; its port on its first line.
    private func chainedProxy(log: String) -> String {
        """
        import socket, sys, threading
        listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen(8)
        print(listener.getsockname()[1], flush=True)
        def pump(source, sink):
            try:
                while True:
                    data = source.recv(65536)
                    if not data: break
                    sink.sendall(data)
            except OSError: pass
            try: sink.shutdown(socket.SHUT_WR)
            except OSError: pass
        def serve(client):
            head = b""
            while b"\\r\\n\\r\\n" not in head:
                data = client.recv(4096)
                if not data: return
                head += data
            line = head.split(b"\\r\\n")[0].decode()
            with open(\(String(reflecting: log)), "a") as out: out.write(line + "\\n")
            method, authority, _ = line.split(" ")
            if method != "CONNECT":
                client.sendall(b"HTTP/1.1 405 Method Not Allowed\\r\\nContent-Length: 0\\r\\n\\r\\n"); client.close(); return
            host, port = authority.rsplit(":", 1)
            upstream = socket.create_connection((host, int(port)))
            client.sendall(b"HTTP/1.1 200 Connection established\\r\\n\\r\\n")
            threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
            pump(client, upstream)
        while True:
            connection, _ = listener.accept()
            threading.Thread(target=serve, args=(connection,), daemon=True).start()
        """
    }
}

/// A real WebSocket (Python's `websockets`, client and server, which nobody here wrote) through
/// the proxy the way a browser sends `ws://`: a `CONNECT`, then the upgrade as plain text
/// inside it. The row is the upgrade's `GET` with `101`; the messages each way are counted
/// and their first bytes kept.
final class ProxyWebSocketTests: XCTestCase {
    private let script = """
    import asyncio, socket, sys
    import websockets
    proxy_port = int(sys.argv[1])
    async def echo(ws, path=None):
        async for message in ws:
            await ws.send("echo " + message if isinstance(message, str) else message)
    async def main():
        async with websockets.serve(echo, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            sock = socket.create_connection(("127.0.0.1", proxy_port))
            sock.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n".encode())
            answer = b""
            while b"\\r\\n\\r\\n" not in answer: answer += sock.recv(4096)
            print(answer.split(b"\\r\\n")[0].decode())
            async with websockets.connect(f"ws://127.0.0.1:{port}/chat?room=2", sock=sock, compression=None) as ws:
                for text in ["one", "two", "three"]:
                    await ws.send(text)
                    print(await ws.recv())
                await ws.send(bytes([0, 1, 2, 3]))
                print(list(await ws.recv()))
    asyncio.run(main())
    """

    func testAWebSocketThroughCONNECTIsARowWithItsMessages() throws {
        guard (try? run("/usr/bin/python3", ["-c", "import websockets"]))?.status == 0 else {
            throw XCTSkip("Python's websockets is not installed (apt install python3-websockets; .ci/run installs it)")
        }
        var options = ProxyOptions()
        options.authority = try LocalCertificateAuthority.loadOrMake(in: try temporaryFolder() + "/ca").0
        let proxy = try startProxy(options)
        let result = try run("/usr/bin/python3", ["-c", script, String(proxy.server.port)], timeout: 60)
        XCTAssertEqual(result.stdout, "HTTP/1.1 200 Connection established\necho one\necho two\necho three\n[0, 1, 2, 3]\n", result.stderr)
        let id = try XCTUnwrap(proxy.events.operations().first { !proxy.events.finished($0).isEmpty })
        let row = proxy.events.finished(id)
        guard case .queued(let method, let url, _, _, _, _)? = row.first?.payload else { return XCTFail("\(row)") }
        XCTAssertEqual(method, "GET")
        XCTAssertTrue(url.hasPrefix("http://127.0.0.1:") && url.hasSuffix("/chat?room=2"), url)
        let status = row.compactMap { event -> Int? in if case .response(let status, _, _, _) = event.payload { status } else { nil } }.first
        XCTAssertEqual(status, 101)
        let counts = row.compactMap { event -> (Int, Int)? in if case .messages(let up, let down) = event.payload { (up, down) } else { nil } }.last
        XCTAssertEqual(counts?.0, 4, "three texts and one binary from the client: \(row)")
        XCTAssertEqual(counts?.1, 4)
        let sent = row.compactMap { event -> Data? in if case .requestBody(.bytes(let data), _, _, _) = event.payload { data } else { nil } }.first
        let received = row.compactMap { event -> Data? in if case .responseBody(.bytes(let data), _, _, _) = event.payload { data } else { nil } }.first
        XCTAssertEqual(sent, Data("one\ntwo\nthree\n".utf8) + Data([0, 1, 2, 3]), "unmasked, one text message a line")
        XCTAssertEqual(received, Data("echo one\necho two\necho three\n".utf8) + Data([0, 1, 2, 3]))
        guard case .finished(_, _, _, _, let reason)? = row.last?.payload else { return XCTFail("\(row)") }
        XCTAssertTrue(reason?.contains("WebSocket: 4 messages") == true, "\(String(describing: reason))")
    }
}
