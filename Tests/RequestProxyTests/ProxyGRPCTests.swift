import FaultServer
import Foundation
import RequestOperations
@testable import RequestProxy
import XCTest

/// gRPC through the decrypting proxy, with Python's `grpcio` on both ends (a server nobody
/// here wrote, over TLS so the upstream leg speaks HTTP/2): unary, server-streaming,
/// client-streaming and bidirectional calls reach the server intact and answer intact, a
/// failing call's status reaches the client unchanged, and each call is one operation whose
/// events carry its trailers (`grpc-status`).
final class ProxyGRPCTests: XCTestCase {
    static let server = """
    import grpc, sys, time
    from concurrent import futures
    cert, key = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
    def unary(request, context): return b"echo:" + request
    def fail(request, context): context.abort(grpc.StatusCode.PERMISSION_DENIED, "no entry for " + request.decode())
    def server_stream(request, context):
        for i in range(int(request)): yield b"part-%d" % i
    def client_stream(requests, context): return b"got:" + b",".join(requests)
    def bidi(requests, context):
        for request in requests: yield b"re:" + request
    def hang(request, context):
        time.sleep(30); return b""
    handler = grpc.method_handlers_generic_handler("test.Echo", {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "Fail": grpc.unary_unary_rpc_method_handler(fail),
        "ServerStream": grpc.unary_stream_rpc_method_handler(server_stream),
        "ClientStream": grpc.stream_unary_rpc_method_handler(client_stream),
        "Bidi": grpc.stream_stream_rpc_method_handler(bidi),
        "Hang": grpc.unary_unary_rpc_method_handler(hang),
    })
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([(key, cert)]))
    server.start()
    print(port, flush=True)
    time.sleep(120)
    """

    static let client = """
    import grpc, json, sys
    port, ca = sys.argv[1], open(sys.argv[2], "rb").read()
    channel = grpc.secure_channel("localhost:" + port, grpc.ssl_channel_credentials(root_certificates=ca))
    grpc.channel_ready_future(channel).result(timeout=20)
    out = {}
    out["unary"] = channel.unary_unary("/test.Echo/Unary")(b"hello", timeout=20).decode()
    out["serverStream"] = [m.decode() for m in channel.unary_stream("/test.Echo/ServerStream")(b"3", timeout=20)]
    out["clientStream"] = channel.stream_unary("/test.Echo/ClientStream")(iter([b"a", b"b", b"c"]), timeout=20).decode()
    out["bidi"] = [m.decode() for m in channel.stream_stream("/test.Echo/Bidi")(iter([b"x", b"y"]), timeout=20)]
    try:
        channel.unary_unary("/test.Echo/Fail")(b"alice", timeout=20)
        out["fail"] = "no error"
    except grpc.RpcError as error:
        out["fail"] = [error.code().name, error.details()]
    print(json.dumps(out))
    """

    /// The decrypting proxy (trusting the test authority upstream) and the grpcio server over
    /// TLS; the server's port and the proxy's authority (for the client). Skips without grpcio.
    private func decryptingProxyBeforeAServer() throws -> (ProxyUnderTest, Int, String) {
        guard (try? run("/usr/bin/python3", ["-c", "import grpc"]).status) == 0 else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail("python3-grpcio is missing: .ci/run installs it") }
            throw XCTSkip("python3-grpcio is not installed")
        }
        let pki = try TestCertificates.make()
        addTeardownBlock { pki.remove() }
        var options = ProxyOptions()
        options.authority = try LocalCertificateAuthority.loadOrMake(in: try temporaryFolder() + "/ca").0
        let proxy = try startProxy(options, trusting: pki.caFile)
        let port = try startPythonServer(Self.server + "\n", arguments: [pki.serverCertificateFile, pki.serverKeyFile])
        return (proxy, port, options.authority!.certificateFile)
    }

    /// Runs `script` (a grpcio client) through the proxy, its argv `port` and `authority`.
    private func launchClient(_ script: String, port: Int, authority: String, proxy: ProxyUnderTest) throws -> (Process, Pipe) {
        let client = Process()
        client.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        client.arguments = ["-c", script, String(port), authority]
        client.environment = ProcessInfo.processInfo.environment.merging(["https_proxy": proxy.url, "no_proxy": "", "NO_PROXY": ""]) { $1 }
        let out = Pipe()
        client.standardOutput = out
        try client.run()
        return (client, out)
    }

    func testCallsOfEveryKindReachTheServerAndTheirStatusReachesTheClient() throws {
        let (proxy, port, authority) = try decryptingProxyBeforeAServer()
        let result = try run("/usr/bin/python3", ["-c", Self.client, String(port), authority],
                             environment: ["https_proxy": proxy.url, "no_proxy": "", "NO_PROXY": ""], timeout: 60)
        XCTAssertEqual(result.status, 0, result.stderr)
        let answer = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data((result.stdout.split(separator: "\n").last ?? "").utf8)) as? [String: Any],
                                   result.stdout + result.stderr)
        XCTAssertEqual(answer["unary"] as? String, "echo:hello")
        XCTAssertEqual(answer["serverStream"] as? [String], ["part-0", "part-1", "part-2"])
        XCTAssertEqual(answer["clientStream"] as? String, "got:a,b,c")
        XCTAssertEqual(answer["bidi"] as? [String], ["re:x", "re:y"])
        XCTAssertEqual(answer["fail"] as? [String], ["PERMISSION_DENIED", "no entry for alice"], "the failing call's status, unchanged")

        proxy.queue.waitUntilAllOperationsAreFinished()
        proxy.queue.events.waitUntilDelivered()
        var calls: [String: String] = [:]
        for event in proxy.events.events {
            if case .queued(let method, let url, _, _, _, _) = event.payload, url.contains("/test.Echo/") { calls[event.operationID] = method + " " + url }
        }
        XCTAssertEqual(Set(calls.values.map { $0.components(separatedBy: "/test.Echo/").last ?? "" }),
                       ["Unary", "ServerStream", "ClientStream", "Bidi", "Fail"], "each call is one operation: \(calls)")
        let statuses = calls.keys.reduce(into: [String: String]()) { statuses, id in
            let method = calls[id]!.components(separatedBy: "/test.Echo/").last!
            for event in proxy.events.finished(id) {
                // A trailer after the messages; a failing call's "trailers-only" answer has it in its head.
                switch event.payload {
                case .trailers(.response, let fields), .headerFields(.response, let fields):
                    if let status = fields.first(where: { $0.name.rawName == "grpc-status" }) { statuses[method] = status.value }
                default: break
                }
            }
        }
        XCTAssertEqual(statuses["Unary"], "0", "the call's status is a trailer in its events: \(statuses)")
        XCTAssertEqual(statuses["Bidi"], "0")
        XCTAssertEqual(statuses["Fail"], "7", "PERMISSION_DENIED")
        // A failed call is the upstream's answer passed on, not an OK: relayed, as a 404 is.
        func outcome(_ method: String) -> RequestOutcome? {
            let id = calls.first { $0.value.hasSuffix("/test.Echo/" + method) }!.key
            return proxy.events.finished(id).lazy.compactMap { event -> RequestOutcome? in
                if case .finished(let outcome, _, _, _, _) = event.payload { return outcome }
                return nil
            }.first
        }
        XCTAssertEqual(outcome("Fail"), .relayed)
        XCTAssertEqual(outcome("Unary"), .success)
        // The call's messages are kept as they passed, both ways (its Body tab decodes them).
        let unary = calls.first { $0.value.hasSuffix("/test.Echo/Unary") }!.key
        let bodies = proxy.events.finished(unary).compactMap { event -> String? in
            switch event.payload {
            case .responseBody(.bytes(let data), _, _, _), .requestBody(.bytes(let data), _, _, _): return String(decoding: data.dropFirst(5), as: UTF8.self)
            default: return nil
            }
        }
        XCTAssertEqual(Set(bodies), ["hello", "echo:hello"], "gRPC's 5-byte prefix, then the message")
        let heads = proxy.events.finished(unary).compactMap { event -> String? in
            if case .headerFields(.response, let fields) = event.payload { return fields.map { $0.name.rawName }.joined(separator: ",") }
            return nil
        }
        XCTAssertFalse(heads.joined().contains("transfer-encoding"), "HTTP/2 has none; the server sent none: \(heads)")
    }

    /// A breakpoint matches a call by its path; the person's answer at it (a gRPC status in a
    /// bodiless head) reaches grpcio as that status.
    func testABreakpointHoldsACallAndAPersonsStatusReachesTheClient() throws {
        let (proxy, port, authority) = try decryptingProxyBeforeAServer()
        _ = proxy.queue.breakpoints.add(Breakpoint(match: try RequestMatch("path:/test.Echo/Unary"), setBy: "test"))
        let (client, out) = try launchClient("""
            import grpc, sys
            channel = grpc.secure_channel("localhost:" + sys.argv[1], grpc.ssl_channel_credentials(root_certificates=open(sys.argv[2], "rb").read()))
            try: print(channel.unary_unary("/test.Echo/Unary")(b"hello", timeout=20))
            except grpc.RpcError as error: print(error.code().name, error.details())
            """, port: port, authority: authority, proxy: proxy)
        var held: RequestOperation?
        let deadline = Date().addingTimeInterval(20)
        while held == nil, Date() < deadline {
            held = proxy.events.operations().compactMap { proxy.queue.operation(withID: $0) }.first { $0.breakpointStage != nil }
            usleep(20_000)
        }
        let operation = try XCTUnwrap(held, "the call stopped at the breakpoint")
        XCTAssertTrue(operation.resolveBreakpoint(.respond(status: 200, headers: ["content-type": "application/grpc", "grpc-status": "14",
                                                                                   "grpc-message": "held and refused"], body: Data()), by: "person"))
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        client.waitUntilExit()
        XCTAssertEqual(said, "UNAVAILABLE held and refused\n")
    }

    /// A person's cancel (`X`) of a call under way reaches grpcio as CANCELLED: the stream is
    /// reset, as a client's own cancel would be.
    func testACancelledCallIsCancelledAtTheClient() throws {
        let (proxy, port, authority) = try decryptingProxyBeforeAServer()
        let (client, out) = try launchClient("""
            import grpc, sys
            channel = grpc.secure_channel("localhost:" + sys.argv[1], grpc.ssl_channel_credentials(root_certificates=open(sys.argv[2], "rb").read()))
            try: print(channel.unary_unary("/test.Echo/Hang")(b"", timeout=25))
            except grpc.RpcError as error: print(error.code().name)
            """, port: port, authority: authority, proxy: proxy)
        var running: RequestOperation?
        let deadline = Date().addingTimeInterval(20)
        while running == nil, Date() < deadline {
            running = proxy.events.events.first { event in
                if case .sent = event.payload { return true }
                return false
            }.flatMap { proxy.queue.operation(withID: $0.operationID) }
            usleep(20_000)
        }
        try XCTUnwrap(running, "the call was sent upstream").cancel(by: "monitor")
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        client.waitUntilExit()
        XCTAssertEqual(said, "CANCELLED\n")
    }
}
