import FaultServer
import Foundation
import RequestOperations
import RequestProxy
import XCTest

/// 100 MiB each way through the proxy, byte for byte, in flat memory; and clients that send
/// what no HTTP client should: each gets a 400 (or its connection closed), never a crash.
/// glibc's `malloc_trim`, which Swift's Glibc module does not export.
@_silgen_name("malloc_trim") private func releaseFreeMemory(_ pad: Int) -> Int32

final class ProxyBulkAndHostileTests: XCTestCase {
    /// A Python server on loopback that answers a POST with the body's length and SHA-256.
    private func startSink() throws -> Int {
        let script = """
        import hashlib, http.server, sys
        class Sink(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_POST(self):
                digest, total = hashlib.sha256(), 0
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        if size == 0:
                            self.rfile.readline(); break
                        data = self.rfile.read(size); self.rfile.readline()
                        digest.update(data); total += len(data)
                else:
                    left = int(self.headers.get("Content-Length", "0"))
                    while left > 0:
                        data = self.rfile.read(min(left, 1 << 20)); left -= len(data)
                        digest.update(data); total += len(data)
                body = f"{total} {digest.hexdigest()}".encode()
                self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args): pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """
        return try startPythonServer(script)
    }

    private func residentKiB() -> Int {
        // What the process holds, not what malloc keeps cached in its arenas after a free
        // (parts copied on several event loops' threads leave each arena its own free pages).
        _ = releaseFreeMemory(0)
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }

    func testHundredMiBUploadAndDownloadPassByteForByteInFlatMemory() throws {
        let upstream = try startFaultServer()
        let sink = try startSink()
        let proxy = try startProxy()
        let folder = try temporaryFolder()
        let file = folder + "/upload.bin"
        let size = 100 << 20
        // Seeded bytes, not zeros: a lost or repeated part changes the digest.
        var generator = SystemRandomNumberGenerator()
        let part = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
        for index in 0..<100 { try handle.write(contentsOf: part.map { $0 ^ UInt8(index) }) }
        try handle.close()
        let before = residentKiB()
        let expected = try run("/usr/bin/sha256sum", [file]).stdout.split(separator: " ").first.map(String.init)
        let uploaded = try run(curl, ["-s", "-x", proxy.url, "--data-binary", "@" + file, "http://127.0.0.1:\(sink)/upload"])
        XCTAssertEqual(uploaded.stdout, "\(size) \(expected ?? "")", uploaded.stderr)
        // Chunked (no length known in advance), as a streaming client sends.
        let chunked = try run(curl, ["-s", "-x", proxy.url, "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + file, "http://127.0.0.1:\(sink)/upload"])
        XCTAssertEqual(chunked.stdout, "\(size) \(expected ?? "")", chunked.stderr)
        let url = upstream.baseURL.absoluteString + "/bytes/\(size)?seed=7"
        let through = try run("/bin/sh", ["-c", "\(curl) -s -x \(proxy.url) '\(url)' | sha256sum"])
        let direct = try run("/bin/sh", ["-c", "\(curl) -s '\(url)' | sha256sum"])
        XCTAssertEqual(through.stdout, direct.stdout)
        let growth = residentKiB() - before
        // Flat: a few buffers, not the bodies (each 100 MiB).
        XCTAssertLessThan(growth, 64 << 10, "resident memory grew \(growth) KiB moving 300 MiB")
    }

    func testMisbehavingClientsGetA400OrAClosedConnectionAndTheProxyServesOn() throws {
        let upstream = try startFaultServer()
        let proxy = try startProxy()
        let port = proxy.server.port
        let target = upstream.baseURL.absoluteString
        let cases: [(String, [UInt8], String)] = [
            ("a request line that is not HTTP", Array("GARBAGE\r\n\r\n".utf8), "HTTP/1.1 400"),
            ("a path, not a URL", Array("GET /relative HTTP/1.1\r\nHost: x\r\n\r\n".utf8), "HTTP/1.1 400"),
            ("a file: URL", Array("GET file:///etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n".utf8), "only http and https"),
            ("a unix socket URL", Array("GET http+unix://%2Ftmp%2Fs/ HTTP/1.1\r\nHost: x\r\n\r\n".utf8), "HTTP/1.1 400"),
            ("a gopher URL", Array("GET gopher://127.0.0.1:70/ HTTP/1.1\r\nHost: x\r\n\r\n".utf8), "only http and https"),
            ("bad chunking", Array("POST \(target)/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nabc\r\n".utf8), "HTTP/1.1 400"),
            ("a TLS hello on the plain port", [0x16, 0x03, 0x01, 0x02, 0x00] + [UInt8](repeating: 0, count: 100), "HTTP/1.1 400"),
            ("CONNECT without a port", Array("CONNECT nohost HTTP/1.1\r\n\r\n".utf8), "CONNECT needs host:port"),
            ("credentials in the URL", Array("GET http://u:p@127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\n\r\n".utf8), "credentials in the URL"),
            // A port past 16 bits took the proxy down (AsyncHTTPClient traps on it).
            ("a port past 16 bits", Array("GET http://127.0.0.1:99999999/ HTTP/1.1\r\nHost: x\r\n\r\n".utf8), "port 99999999 is not between 1 and 65535"),
        ]
        for (name, bytes, expected) in cases {
            let answer = rawExchange(port: port, bytes)
            XCTAssertTrue(answer.contains(expected), "\(name): \(answer.prefix(300))")
        }
        // Headers past NIO's limit: refused, the connection closed (a reset while the client
        // still sends is fine), and nothing reaches the upstream.
        let oversize = Array("GET \(target)/status/200 HTTP/1.1\r\nHost: x\r\nX-Big: ".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 200_000) + Array("\r\n\r\n".utf8)
        let answer = rawExchange(port: port, oversize)
        XCTAssertFalse(answer.contains("200 OK"), String(answer.prefix(200)))
        // A client that goes away mid-body: its operation is cancelled by the client.
        _ = rawExchange(port: port, Array("POST \(target)/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\nabc".utf8), wait: 1)
        // And the proxy still serves.
        let after = try run(curl, ["-s", "-x", proxy.url, target + "/status/200"])
        XCTAssertEqual(after.stdout, "status 200\n")
        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        let cancelled = proxy.events.events.contains { event in
            if case .cancelled(let by) = event.payload { return by == "client" || by == "task" }
            return false
        }
        XCTAssertTrue(cancelled, "the abandoned upload's operation was cancelled")
    }

    func testAThousandClientsAtOnce() throws {
        let upstream = try startFaultServer()
        let proxy = try startProxy()
        // 1,000 connections opened before any answer can come (each waits 500 ms upstream),
        // one request each, from Python's asyncio: curl's --parallel stops at 300.
        let script = """
        import asyncio, sys
        port, url = int(sys.argv[1]), sys.argv[2]
        async def one():
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"GET {url} HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n".encode())
            await writer.drain()
            answer = await reader.read()
            writer.close()
            return answer.split(b" ", 2)[1].decode() if answer else "none"
        async def main():
            codes = await asyncio.wait_for(asyncio.gather(*[one() for _ in range(1000)], return_exceptions=True), 100)
            counts = {}
            for code in codes: counts[str(code)] = counts.get(str(code), 0) + 1
            print(counts)
        asyncio.run(main())
        """
        let result = try run("/usr/bin/python3", ["-c", script, String(proxy.server.port), upstream.baseURL.absoluteString + "/delay/500"], timeout: 120)
        XCTAssertEqual(result.stdout, "{'200': 1000}\n", result.stderr)
        XCTAssertEqual(proxy.events.operations().count, 1000)
        // Each of the thousand connections is told to be the one program's, found again at
        // the descriptors it used lately or among all of them.
        let origins = proxy.events.events.compactMap { event -> String? in
            if case .queued(_, _, _, _, _, let options) = event.payload { return options?.origin ?? "none" }
            return nil
        }
        XCTAssertEqual(origins.count, 1000)
        XCTAssertEqual(Set(origins).count, 1, "\(Set(origins))")
        XCTAssertTrue(origins.first?.hasPrefix("python3 ") == true, "\(Set(origins))")
    }

    func testAClientSlowToSendItsHeadIsCutOff() throws {
        let upstream = try startFaultServer()
        var options = ProxyOptions()
        options.requestHeadTimeout = 0.5
        let proxy = try startProxy(options)
        // Half a head, then nothing: closed once the deadline passed, nothing answered.
        let started = Date()
        let answer = rawExchange(port: proxy.server.port, Array("GET \(upstream.baseURL.absoluteString)/status/200 HTTP/1.1\r\nHost: x\r\nX-Slow:".utf8), wait: 10)
        XCTAssertEqual(answer, "")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "closed at the head's deadline, not the idle limit")
        // A connection that sends nothing at all is closed too.
        XCTAssertEqual(rawExchange(port: proxy.server.port, [], wait: 10), "")
        // One whose request is slow upstream is not: the deadline is the head's only.
        let slow = try run(curl, ["-s", "-x", proxy.url, upstream.baseURL.absoluteString + "/delay/1500"])
        XCTAssertEqual(slow.stdout, "delayed 1500 ms\n", slow.stderr)
        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        XCTAssertTrue(proxy.events.operations().count == 1, "\(proxy.events.operations())")
    }
}
