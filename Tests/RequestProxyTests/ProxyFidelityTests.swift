import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations
import RequestProxy
import XCTest

/// What was said, as it was said: header fields in their order, each repeat apart, names as
/// the peer spelled them, both ways; and every answer's body kept for the events (up to the
/// cap) as it streams to the client. Raw sockets on both sides, so nothing re-orders it.
final class ProxyFidelityTests: XCTestCase {
    /// An upstream that answers each request with its head's field lines as its body, and
    /// fields of its own in an order no sorting gives, one of them twice.
    private func startHeadEchoServer() throws -> Int {
        try startRawPythonServer(serving: """
        data = b""
        while b"\\r\\n\\r\\n" not in data:
            chunk = conn.recv(65536)
            if not chunk: break
            data += chunk
        lines = data.split(b"\\r\\n\\r\\n")[0].split(b"\\r\\n")[1:]
        body = b"\\n".join(lines)
        conn.sendall(b"HTTP/1.1 200 OK\\r\\nX-Zeta: z\\r\\nSet-Cookie: a=1\\r\\nx-MiXed-Answer: m\\r\\nSet-Cookie: b=2\\r\\nX-Alpha: a\\r\\nContent-Length: " + str(len(body)).encode() + b"\\r\\nConnection: close\\r\\n\\r\\n" + body)
        conn.close()
        """)
    }

    func testFieldsGoInTheirOrderRepeatsApartNamesAsSpeltBothWays() throws {
        let upstream = try startHeadEchoServer()
        let proxy = try startProxy()
        let request = "GET http://127.0.0.1:\(upstream)/fields HTTP/1.1\r\nHost: 127.0.0.1:\(upstream)\r\nX-Zeta: 1\r\nX-Alpha: 2\r\n"
            + "X-Dup: a\r\nX-MiXeD-Case: 3\r\nX-Dup: b\r\nConnection: close\r\n\r\n"
        let answer = rawExchange(port: Int(proxy.server.port), Array(request.utf8))
        let parts = answer.components(separatedBy: "\r\n\r\n")
        XCTAssertEqual(parts.count, 2, answer)
        // What the upstream read: the client's fields in the client's order and spelling.
        let sent = parts.last!.split(separator: "\n").map(String.init).filter { $0.hasPrefix("X-") || $0.hasPrefix("x-") }
        XCTAssertEqual(sent, ["X-Zeta: 1", "X-Alpha: 2", "X-Dup: a", "X-MiXeD-Case: 3", "X-Dup: b"], parts.last!)
        // What the client read: the upstream's fields in its order and spelling, two cookies two.
        let received = parts[0].split(separator: "\r\n").dropFirst().map(String.init)
            .filter { ["x-zeta", "set-cookie", "x-mixed-answer", "x-alpha"].contains($0.split(separator: ":")[0].lowercased()) }
        XCTAssertEqual(received, ["X-Zeta: z", "Set-Cookie: a=1", "x-MiXed-Answer: m", "Set-Cookie: b=2", "X-Alpha: a"], parts[0])

        // The events say the same, both heads in order (`headerFields`), beside `headers`.
        let id = try XCTUnwrap(proxy.events.firstOperation())
        let heads = proxy.events.finished(id).compactMap { event -> (FieldSide, [String])? in
            guard case .headerFields(let side, let fields) = event.payload else { return nil }
            return (side, fields.map { "\($0.name.rawName): \($0.value)" }.filter { $0.lowercased().hasPrefix("x-") || $0.hasPrefix("Set-Cookie") })
        }
        XCTAssertEqual(heads.map(\.0), [.request, .response])
        XCTAssertEqual(heads.first?.1, ["X-Zeta: 1", "X-Alpha: 2", "X-Dup: a", "X-MiXeD-Case: 3", "X-Dup: b"])
        XCTAssertEqual(heads.last?.1, ["X-Zeta: z", "Set-Cookie: a=1", "x-MiXed-Answer: m", "Set-Cookie: b=2", "X-Alpha: a"])
    }

    /// `Host` goes where the client put it and as it spelt it; the value the request's target
    /// names, whatever the client's said (RFC 9112 §3.2.2); the events record it so. Two of them
    /// are refused: the upstream would pick one, not necessarily the one anything before it read.
    func testTheHostGoesWhereItStoodNamingTheTarget() throws {
        let upstream = try startHeadEchoServer()
        let proxy = try startProxy()
        func upstreamRead(_ host: String) -> [String] {
            let request = "GET http://127.0.0.1:\(upstream)/fields HTTP/1.1\r\nX-Zeta: 1\r\n\(host)\r\nX-Alpha: 2\r\nConnection: close\r\n\r\n"
            let answer = rawExchange(port: Int(proxy.server.port), Array(request.utf8))
            return answer.components(separatedBy: "\r\n\r\n").last!.split(separator: "\n").map(String.init)
                .filter { $0.hasPrefix("X-") || $0.lowercased().hasPrefix("host:") }
        }
        XCTAssertEqual(upstreamRead("hOsT: 127.0.0.1:\(upstream)"), ["X-Zeta: 1", "hOsT: 127.0.0.1:\(upstream)", "X-Alpha: 2"])
        XCTAssertEqual(upstreamRead("Host: elsewhere.example"), ["X-Zeta: 1", "Host: 127.0.0.1:\(upstream)", "X-Alpha: 2"],
                       "the target's host, in the client's place")
        let id = try XCTUnwrap(proxy.events.firstOperation())
        let recorded = proxy.events.finished(id).compactMap { event -> [String]? in
            guard case .headerFields(.request, let fields) = event.payload else { return nil }
            return fields.map { "\($0.name.rawName): \($0.value)" }.filter { !$0.hasPrefix("Connection") }
        }
        XCTAssertEqual(recorded.first, ["X-Zeta: 1", "hOsT: 127.0.0.1:\(upstream)", "X-Alpha: 2"])

        let twice = "GET http://127.0.0.1:\(upstream)/fields HTTP/1.1\r\nHost: 127.0.0.1:\(upstream)\r\nhost: other.example\r\n\r\n"
        let refused = rawExchange(port: Int(proxy.server.port), Array(twice.utf8))
        XCTAssertTrue(refused.hasPrefix("HTTP/1.1 400"), refused)
        XCTAssertTrue(refused.contains("more than one Host field"), refused)
    }

    /// An answer a person types at a breakpoint reaches the client, and its body is in the
    /// row's `responseBody` (a relayed answer's body said only "streamed to the caller").
    /// An answer the proxy's settings judge a failure (a 503 where answers are not all relayed)
    /// is still passed on as it came: its fields in order, repeats apart, spelt as sent.
    func testAFailedAnswerIsPassedOnWithItsFieldsAsSent() throws {
        let upstream = try startRawPythonServer(serving: """
        data = b""
        while b"\\r\\n\\r\\n" not in data:
            chunk = conn.recv(65536)
            if not chunk: break
            data += chunk
        conn.sendall(b"HTTP/1.1 503 Service Unavailable\\r\\nX-Zeta: z\\r\\nSet-Cookie: a=1\\r\\nx-MiXed-Answer: m\\r\\nSet-Cookie: b=2\\r\\nX-Alpha: a\\r\\nContent-Length: 4\\r\\nConnection: close\\r\\n\\r\\nbusy")
        conn.close()
        """)
        var options = ProxyOptions()
        options.operation.relaysEveryAnswer = false
        let proxy = try startProxy(options)
        let request = "GET http://127.0.0.1:\(upstream)/busy HTTP/1.1\r\nHost: 127.0.0.1:\(upstream)\r\nConnection: close\r\n\r\n"
        let answer = rawExchange(port: Int(proxy.server.port), Array(request.utf8))
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 503"), answer)
        let received = answer.components(separatedBy: "\r\n\r\n")[0].split(separator: "\r\n").dropFirst().map(String.init)
            .filter { ["x-zeta", "set-cookie", "x-mixed-answer", "x-alpha"].contains($0.split(separator: ":")[0].lowercased()) }
        XCTAssertEqual(received, ["X-Zeta: z", "Set-Cookie: a=1", "x-MiXed-Answer: m", "Set-Cookie: b=2", "X-Alpha: a"], answer)
        XCTAssertTrue(answer.hasSuffix("busy"), answer)
    }

    func testAnAnswerTypedAtABreakpointShowsItsBody() throws {
        let fault = try startFaultServer()
        let proxy = try startProxy()
        _ = proxy.queue.breakpoints.add(Breakpoint(match: try RequestMatch("path:/status/200"), setBy: "test"))
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-s", "--max-time", "20", "-x", proxy.url, fault.baseURL.absoluteString + "/status/200"]
        let out = Pipe()
        curl.standardOutput = out
        try curl.run()
        var held: RequestOperation?
        let deadline = Date().addingTimeInterval(10)
        while held == nil, Date() < deadline {
            held = proxy.events.operations().compactMap { proxy.queue.operation(withID: $0) }.first { $0.breakpointStage != nil }
            usleep(20_000)
        }
        let operation = try XCTUnwrap(held, "the request stopped at the breakpoint")
        XCTAssertTrue(operation.resolveBreakpoint(.respond(status: 200, headers: ["Content-Type": "application/json"], body: Data(#"{"typed":true}"#.utf8)), by: "person"))
        let answer = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        curl.waitUntilExit()
        XCTAssertEqual(answer, #"{"typed":true}"#)
        let bodies = proxy.events.finished(operation.id).compactMap { event -> RecordedBody? in
            if case .responseBody(let body, _, _, _) = event.payload { body } else { nil }
        }
        XCTAssertEqual(bodies.last, .bytes(Data(#"{"typed":true}"#.utf8)))
    }

    /// A streamed upload (chunked, or over 64 KiB) is in its `requestBody` event as it went,
    /// up to the queue's body limit: `queued` can only say "a stream".
    func testAStreamedUploadIsKeptAsItWent() throws {
        let fault = try startFaultServer()
        let proxy = try startProxy()
        let folder = try temporaryFolder()
        let file = folder + "/upload.txt"
        try Data(String(repeating: "0123456789", count: 10_000).utf8).write(to: URL(fileURLWithPath: file))
        let curl = try run("/usr/bin/curl", ["-s", "-x", proxy.url, "-H", "Content-Type: text/plain", "--data-binary", "@" + file,
                                             fault.baseURL.absoluteString + "/sink"])
        XCTAssertEqual(curl.status, 0, curl.stderr)
        let id = try XCTUnwrap(proxy.events.firstOperation())
        let events = proxy.events.finished(id)
        let queuedSaysStream = events.contains { event in
            if case .queued(_, _, _, _, .omitted(_, "a stream")?, _) = event.payload { true } else { false }
        }
        XCTAssertTrue(queuedSaysStream)
        let bodies = events.compactMap { event -> (RecordedBody, Int, Bool, String?)? in
            if case .requestBody(let body, let total, let truncated, let type) = event.payload { (body, total, truncated, type) } else { nil }
        }
        XCTAssertEqual(bodies.count, 1)
        guard case .bytes(let kept)? = bodies.first?.0 else { return XCTFail("kept as it went: \(bodies)") }
        XCTAssertEqual(kept.count, EventHub.defaultBodyLimit)
        XCTAssertEqual(String(decoding: kept.prefix(20), as: UTF8.self), "01234567890123456789")
        XCTAssertEqual(bodies.first?.1, 100_000)
        XCTAssertEqual(bodies.first?.2, true)
        XCTAssertEqual(bodies.first?.3, "text/plain")
    }

    /// A field changed on the way (here by an interceptor, as an edit at a breakpoint does)
    /// goes changed, once, where it stood; one added goes after; the rest as the client sent.
    func testAChangedFieldGoesWhereItStoodAndTheRestAsSent() throws {
        let upstream = try startHeadEchoServer()
        var options = ProxyOptions()
        options.operation.interceptors = [HeaderChange()]
        let proxy = try startProxy(options)
        let request = "GET http://127.0.0.1:\(upstream)/fields HTTP/1.1\r\nHost: 127.0.0.1:\(upstream)\r\nX-Zeta: 1\r\nX-Dup: a\r\n"
            + "X-Alpha: 2\r\nX-Dup: b\r\nConnection: close\r\n\r\n"
        let answer = rawExchange(port: Int(proxy.server.port), Array(request.utf8))
        let sent = answer.components(separatedBy: "\r\n\r\n").last!.split(separator: "\n").map(String.init).filter { $0.hasPrefix("X-") }
        XCTAssertEqual(sent, ["X-Zeta: 1", "X-Dup: edited", "X-Alpha: 2", "X-Added: yes"], answer)
    }

    private struct HeaderChange: RequestInterceptor {
        var name: String { "header change" }
        func intercept(_ request: URLRequest, context: InterceptionContext) async throws -> Interception {
            var changed = request
            changed.setValue("edited", forHTTPHeaderField: "X-Dup")
            changed.setValue("yes", forHTTPHeaderField: "X-Added")
            return Interception(changed)
        }
    }

    /// A relayed 2xx's body is in its `responseBody` event, up to the cap, while the client
    /// gets all of it; with the cap at 0, none is kept.
    func testAStreamedAnswersBodyIsKeptUpToTheCap() throws {
        let fault = try startFaultServer()
        var options = ProxyOptions()
        options.operation.responseBodyCap = 1000
        let proxy = try startProxy(options)
        let target = fault.baseURL.absoluteString + "/bytes/5000?seed=7"
        let curl = try run("/usr/bin/curl", ["-s", "-x", proxy.url, "-o", "/dev/null", "-w", "%{size_download}", target])
        XCTAssertEqual(curl.stdout, "5000")
        let id = try XCTUnwrap(proxy.events.firstOperation())
        let bodies = proxy.events.finished(id).compactMap { event -> (RecordedBody, Int, Bool)? in
            if case .responseBody(let body, let total, let truncated, _) = event.payload { (body, total, truncated) } else { nil }
        }
        XCTAssertEqual(bodies.count, 1)
        guard case .bytes(let kept)? = bodies.first?.0 else { return XCTFail("the body's first bytes are kept: \(bodies)") }
        XCTAssertEqual(kept.count, 1000)
        XCTAssertEqual(bodies.first?.1, 5000)
        XCTAssertEqual(bodies.first?.2, true, "truncated at the cap")

        var none = ProxyOptions()
        none.operation.responseBodyCap = 0
        let uncapped = try startProxy(none)
        _ = try run("/usr/bin/curl", ["-s", "-x", uncapped.url, "-o", "/dev/null", target])
        let other = try XCTUnwrap(uncapped.events.firstOperation())
        let omitted = uncapped.events.finished(other).contains { event in
            if case .responseBody(.omitted(5000, let reason), _, _, _) = event.payload { reason.contains("body cap is 0") } else { false }
        }
        XCTAssertTrue(omitted, "cap 0: named, not kept")
    }
}
