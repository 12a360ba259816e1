import FaultServer
import Foundation
import RequestOperations
@testable import RequestProxy
import XCTest

/// HTTP/2 from clients through the proxy: chosen by ALPN on decrypted TLS (curl, and Python's
/// `h2`), and with prior knowledge in plain text after `CONNECT` (the `PRI *` preface, as gRPC
/// without TLS sends it). Each stream is one operation; streams on one connection run side by
/// side, a slow one holding none of the others; a stream's reset cancels its operation, and a
/// cancelled operation resets its stream, the connection going on.
final class ProxyHTTP2Tests: XCTestCase {
    private func httpsUpstream() throws -> (TestCertificates, FaultServer, ProxyOptions) {
        try Self.upstreamWithAuthority(self)
    }

    /// An HTTPS fault server with certificates made now, and proxy options with an authority.
    static func upstreamWithAuthority(_ test: XCTestCase) throws -> (TestCertificates, FaultServer, ProxyOptions) {
        let pki = try TestCertificates.make()
        test.addTeardownBlock { pki.remove() }
        let upstream = try test.startFaultServer(tls: pki)
        var options = ProxyOptions()
        let folder = try test.temporaryFolder() + "/ca"
        options.authority = try LocalCertificateAuthority.loadOrMake(in: folder).0
        return (pki, upstream, options)
    }

    private func queued(_ proxy: ProxyUnderTest) -> [String: (url: String, options: RecordedOptions?)] {
        var found: [String: (String, RecordedOptions?)] = [:]
        for event in proxy.events.events {
            if case .queued(_, let url, _, _, _, let options) = event.payload { found[event.operationID] = (url, options) }
        }
        return found
    }

    func testCurlChoosesHTTP2ByALPNAndEachRequestIsAnOperation() throws {
        let (pki, upstream, options) = try httpsUpstream()
        let proxy = try startProxy(options, trusting: pki.caFile)
        let base = "https://localhost:\(upstream.port)"
        let ca = options.authority!.certificateFile
        let get = try run(curl, ["-s", "-v", "--http2", "--cacert", ca, "-x", proxy.url, base + "/status/200"])
        XCTAssertEqual(get.stdout, "status 200\n", get.stderr)
        XCTAssertTrue(get.stderr.contains("ALPN: server accepted h2"), get.stderr)
        XCTAssertTrue(get.stderr.contains("< HTTP/2 200"), get.stderr)
        // A body of no said length (`-T -`: HTTP/2 needs none), longer than is read whole: it
        // streams to the upstream, every byte.
        let folder = try temporaryFolder()
        let body = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try body.write(to: URL(fileURLWithPath: folder + "/body.bin"))
        let upload = try run("/bin/sh", ["-c", "cat \(folder)/body.bin | \(curl) -s --http2 --cacert \(ca) -x \(proxy.url) -X POST -T - -o /dev/null -w '%{http_version} %{http_code}' \(base)/echo"])
        XCTAssertEqual(upload.stdout, "2 200", upload.stderr)
        // The 404 reaches the client as it came, over HTTP/2 too.
        let missing = try run(curl, ["-s", "--http2", "--cacert", ca, "-x", proxy.url, "-o", "/dev/null", "-w", "%{http_version} %{http_code}", base + "/status/404"])
        XCTAssertEqual(missing.stdout, "2 404", missing.stderr)

        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        let rows = queued(proxy)
        let streams = rows.filter { $0.value.url.hasPrefix(base) }
        XCTAssertEqual(streams.count, 3, "\(rows)")
        for (id, row) in streams {
            XCTAssertTrue(id.hasSuffix("-s1"), "an HTTP/2 request's id names its stream: \(id)")
            XCTAssertEqual(row.options?.clientHTTPVersion, "HTTP/2.0", id)
        }
        let echoed = streams.first { $0.value.url.hasSuffix("/echo") }!.key
        let ended = proxy.events.finished(echoed)
        XCTAssertTrue(ended.contains { if case .finished(.success, 200?, _, _, _) = $0.payload { true } else { false } }, "\(ended)")
        let sent = ended.compactMap { event -> Int? in if case .requestBody(_, let total, _, _) = event.payload { total } else { nil } }.last
        XCTAssertEqual(sent, body.count, "the whole streamed body went up: \(ended.map(\.payload.name))")
    }

    /// HTTP/2 on both sides: the client's stream is relayed over the upstream's (the NIO
    /// transport takes h2 where the server offers it), and the row says both versions.
    func testHTTP2OnBothSidesIsSaidForEachSide() throws {
        let (pki, _, options) = try httpsUpstream()
        let upstream = try startFaultServer(tls: pki, http2: true)
        let proxy = try startProxy(options, trusting: pki.caFile)
        let url = "https://localhost:\(upstream.port)/bytes/1000"
        let get = try run(curl, ["-s", "--http2", "--cacert", options.authority!.certificateFile, "-x", proxy.url, "-o", "/dev/null",
                                 "-w", "%{http_version} %{http_code} %{size_download}", "-H", "X-Zeta: 1", "-H", "X-Alpha: 2", url])
        XCTAssertEqual(get.stdout, "2 200 1000", get.stderr)
        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        let id = try XCTUnwrap(queued(proxy).first { $0.value.url == url }?.key)
        let versions = proxy.events.finished(id).compactMap { event -> String? in
            if case .response(_, _, _, let version) = event.payload { return version }
            return nil
        }
        XCTAssertEqual(versions, ["HTTP/2.0"], "the upstream answered over HTTP/2")
        XCTAssertEqual(queued(proxy)[id]?.options?.clientHTTPVersion, "HTTP/2.0")
        // The fields as the client sent them, in order, as HTTP/2 spells them.
        let sent = proxy.events.finished(id).compactMap { event -> String? in
            if case .headerFields(.request, let fields) = event.payload { return fields.map { $0.name.rawName }.joined(separator: ",") }
            return nil
        }
        XCTAssertTrue(sent.first?.contains("x-zeta,x-alpha") == true, "\(sent)")
    }

    /// The upstream hears the version the client chose: an HTTP/1.1 client's request goes
    /// out over HTTP/1.1 to a server that offers h2 (as it would with no proxy), an HTTP/2
    /// client's over HTTP/2, through one proxy, in turn and at once.
    func testTheUpstreamHearsTheVersionTheClientSpoke() throws {
        let (pki, _, options) = try httpsUpstream()
        let upstream = try startFaultServer(tls: pki, http2: true)
        let proxy = try startProxy(options, trusting: pki.caFile)
        let url = "https://localhost:\(upstream.port)/bytes/100"
        func get(_ version: String, _ tag: String) throws -> String {
            try run(curl, ["-s", version, "--cacert", options.authority!.certificateFile, "-x", proxy.url, "-o", "/dev/null",
                           "-w", "%{http_version} %{http_code}", url + "?as=" + tag]).stdout
        }
        XCTAssertEqual(try get("--http1.1", "one"), "1.1 200")
        XCTAssertEqual(try get("--http2", "two"), "2 200")
        XCTAssertEqual(try get("--http1.1", "three"), "1.1 200", "after an h2 connection to the server is open")
        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        func upstreamVersion(_ tag: String) throws -> String? {
            let id = try XCTUnwrap(queued(proxy).first { $0.value.url == url + "?as=" + tag }?.key, tag)
            return proxy.events.finished(id).lazy.compactMap { event -> String? in
                if case .response(_, _, _, let version) = event.payload { return version }
                return nil
            }.first
        }
        XCTAssertEqual(try upstreamVersion("one"), "HTTP/1.1", "an HTTP/1.1 client: HTTP/1.1 upstream")
        XCTAssertEqual(try upstreamVersion("two"), "HTTP/2.0", "an HTTP/2 client: h2 upstream, as the server offers")
        XCTAssertEqual(try upstreamVersion("three"), "HTTP/1.1")
        XCTAssertEqual(queued(proxy).first { $0.value.url == url + "?as=one" }?.value.options?.clientHTTPVersion, "HTTP/1.1")
    }

    func testStreamsOnOneConnectionRunSideBySideAndAResetCancelsOnlyItsOwn() throws {
        let (pki, upstream, options) = try httpsUpstream()
        let proxy = try startProxy(options, trusting: pki.caFile)
        let answer = try runH2(proxy: proxy, port: upstream.port, mode: "tls:" + options.authority!.certificateFile,
                               requests: ["GET /delay/1500", "GET /bytes/70000", "GET /status/200", "RESET /hang", "GET /bytes/10",
                                          "STALL /bytes/3000000", "LATER /bytes/20"])
        let streams = answer.streams
        // The slow one ends last; the others did not wait for it; the reset one was reset by the client.
        XCTAssertEqual(answer.order.last, 1, "the 1.5 s stream ends after the others: \(answer.order)")
        XCTAssertEqual(streams[3]?.status, "200")
        XCTAssertEqual(streams[3]?.bytes, 70000, "a body past the initial window: flow control let it through")
        XCTAssertEqual(streams[5]?.status, "200")
        XCTAssertEqual(streams[9]?.status, "200")
        // A stream whose client stopped reading holds its own window shut, and none of the others.
        XCTAssertLessThanOrEqual(streams[11]?.bytes ?? .max, 65535, "no more than the stream's window: \(answer)")
        XCTAssertEqual(streams[13]?.bytes, 20, "a stream opened after the stalled one is answered")
        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        let rows = queued(proxy)
        let ids = rows.keys.filter { $0.contains("-s") }.sorted()
        XCTAssertEqual(Set(ids.map { $0.split(separator: "-")[0] }).count, 1, "one connection: \(ids)")
        XCTAssertEqual(Set(ids.map { String($0.split(separator: "-")[1]) }), ["s1", "s3", "s5", "s7", "s9", "s11", "s13"])
        let hang = ids.first { $0.hasSuffix("-s7") }!
        let cancelled = proxy.events.finished(hang).contains { event in
            if case .finished(.cancelled, _, _, _, let reason?) = event.payload { return reason.contains(ProxyExchange.clientCanceller) }
            return false
        }
        XCTAssertTrue(cancelled, "the stream's reset cancelled its operation, by the client: \(proxy.events.finished(hang))")
    }

    func testACancelledOperationResetsItsStreamAndTheConnectionGoesOn() throws {
        let (pki, upstream, options) = try httpsUpstream()
        let proxy = try startProxy(options, trusting: pki.caFile)
        // The test cancels the held request as a person's X does, while the client waits.
        let queue = proxy.queue, recorder = proxy.events
        let canceller = Thread {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                let id = recorder.events.first { event in
                    if case .queued(_, let url, _, _, _, _) = event.payload { return url.hasSuffix("/hang") }
                    return false
                }?.operationID
                if let id, let operation = queue.operation(withID: id) {
                    operation.cancel(by: "monitor")
                    return
                }
                usleep(50_000)
            }
        }
        canceller.start()
        let answer = try runH2(proxy: proxy, port: upstream.port, mode: "tls:" + options.authority!.certificateFile,
                               requests: ["GET /hang", "LATER /status/200"])
        XCTAssertNotNil(answer.streams[1]?.reset, "the cancelled operation's stream was reset: \(answer)")
        XCTAssertNil(answer.streams[1]?.status, "no answer was made up for it")
        XCTAssertEqual(answer.streams[3]?.status, "200", "a request sent after it on the same connection is answered")
    }

    func testPriorKnowledgeInPlainTextAfterCONNECTIsReadAsHTTP2() throws {
        // With an authority: a proxy without one relays every CONNECT as bytes, unread.
        let (_, _, options) = try httpsUpstream()
        let upstream = try startFaultServer()
        let proxy = try startProxy(options)
        let answer = try runH2(proxy: proxy, port: upstream.port, mode: "plain", requests: ["GET /status/201", "GET /bytes/5"])
        XCTAssertEqual(answer.streams[1]?.status, "201", "\(answer)")
        XCTAssertEqual(answer.streams[3]?.bytes, 5)
        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        let rows = queued(proxy).filter { $0.key.contains("-s") }
        XCTAssertEqual(rows.values.map(\.url).sorted(), ["http://127.0.0.1:\(upstream.port)/bytes/5", "http://127.0.0.1:\(upstream.port)/status/201"])
        XCTAssertTrue(rows.values.allSatisfy { $0.options?.clientHTTPVersion == "HTTP/2.0" })
    }

    func testHTTP1OnlyOffersNoH2() throws {
        var (pki, upstream, options) = try httpsUpstream()
        options.offersHTTP2 = false
        let proxy = try startProxy(options, trusting: pki.caFile)
        let get = try run(curl, ["-s", "-v", "--http2", "--cacert", options.authority!.certificateFile, "-x", proxy.url,
                                 "https://localhost:\(upstream.port)/status/200"])
        XCTAssertEqual(get.stdout, "status 200\n", get.stderr)
        XCTAssertTrue(get.stderr.contains("ALPN: server accepted http/1.1"), get.stderr)
    }

    /// A client's trailers go on after its body: an HTTP/2 POST whose body ends with trailing
    /// fields reaches an HTTP/1.1 upstream chunked, the fields after the last chunk, and the row
    /// shows them.
    func testAClientsTrailersReachTheUpstreamAfterItsBody() throws {
        let upstream = try startRawPythonServer(serving: """
        data = b""
        while b"\\r\\n0\\r\\n" not in data and b"\\r\\n\\r\\n0\\r\\n" not in data:
            more = conn.recv(65536)
            if not more: return conn.close()
            data += more
        while not data.endswith(b"\\r\\n\\r\\n"):
            more = conn.recv(65536)
            if not more: break
            data += more
        head, _, rest = data.partition(b"\\r\\n\\r\\n")
        trailers = rest.split(b"\\r\\n0\\r\\n", 1)[-1].strip().decode()
        body = ("chunked=" + str(b"transfer-encoding: chunked" in head.lower()) + " trailers=" + trailers.replace("\\r\\n", "; ")).encode()
        conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n" % len(body) + body)
        conn.close()
        """)
        let (_, _, options) = try ProxyHTTP2Tests.upstreamWithAuthority(self)
        let proxy = try startProxy(options)
        let answer = try runH2(proxy: proxy, port: upstream, mode: "plain", requests: ["TRAILERS /upload"])
        XCTAssertEqual(answer.streams[1]?.status, "200", "\(answer)")
        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        let id = try XCTUnwrap(queued(proxy).first { $0.value.url.hasSuffix("/upload") }?.key)
        let events = proxy.events.finished(id)
        let sent = events.compactMap { event -> String? in
            if case .trailers(.request, let fields) = event.payload { return fields.map { "\($0.name.rawName): \($0.value)" }.joined(separator: "; ") }
            return nil
        }
        XCTAssertEqual(sent, ["x-checksum: sha-256=abc; x-count: 3"], "the row shows the client's trailers")
        let body = events.compactMap { event -> String? in
            if case .responseBody(.bytes(let data), _, _, _) = event.payload { return String(decoding: data, as: UTF8.self) }
            return nil
        }
        XCTAssertEqual(body, ["chunked=True trailers=x-checksum: sha-256=abc; x-count: 3"], "the upstream read them after the last chunk")
    }
}
