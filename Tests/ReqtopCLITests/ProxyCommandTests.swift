import FaultServer
import RequestProxy
import Foundation
import XCTest

/// `reqtop proxy` as a person runs it, including one who is not root (CI is root, where a
/// folder or key made in the wrong place would not show): the authority made in their own
/// config folder, closed to others; bad flags named with exit status 2; the headless proxy
/// serving curl and stopping cleanly on SIGTERM.
final class ProxyCommandTests: XCTestCase {
    /// A home folder the unprivileged user owns.
    private func home() throws -> String {
        let folder = try makeTemporaryFolder("proxy-home")
        chmod(folder, 0o755)
        if UnprivilegedUser.isRoot { try UnprivilegedUser.plant(folder) }
        return folder
    }

    func testTheAuthorityIsMadeInTheUsersOwnConfigFolderClosedToOthers() throws {
        let home = try home()
        let first = try reqtop(["proxy", "--ca"], unprivileged: true, environment: ["HOME": home, "XDG_CONFIG_HOME": ""])
        XCTAssertEqual(first.status, 0, first.stderr)
        let certificate = home + "/.config/reqtop/ca/ca.pem"
        XCTAssertTrue(first.stdout.contains("certificate: \(certificate)"), first.stdout)
        XCTAssertTrue(first.stdout.contains("(made now)"), first.stdout)
        XCTAssertTrue(first.stdout.contains("NODE_EXTRA_CA_CERTS=\(certificate)"), first.stdout)
        XCTAssertTrue(first.stdout.contains("update-ca-certificates --fresh"), "and how to take it back: \(first.stdout)")
        XCTAssertFalse(first.stdout.contains("PRIVATE KEY"), "the key is never printed")
        var info = stat()
        XCTAssertEqual(stat(home + "/.config/reqtop/ca", &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o700)
        XCTAssertEqual(stat(home + "/.config/reqtop/ca/ca-key.pem", &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        if UnprivilegedUser.isRoot { XCTAssertEqual(info.st_uid, UnprivilegedUser.uid, "the key is the user's own") }
        let again = try reqtop(["proxy", "--ca"], unprivileged: true, environment: ["HOME": home, "XDG_CONFIG_HOME": ""])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertFalse(again.stdout.contains("(made now)"), "made once: \(again.stdout)")
    }

    func testBadFlagsAreNamedWithStatus2() throws {
        let cases: [([String], String)] = [
            (["proxy", "--bind", "0.0.0.0"], "--allow-remote"),
            (["proxy", "--bind", "0.0.0.0", "--allow-remote"], "--auth"),
            (["proxy", "--port", "70000"], "--port"),
            (["proxy", "--auth", "nocolon"], "user:password"),
            (["proxy", "--no-intercept", "--tunnel", "example.com"], "--no-intercept"),
            (["proxy", "--transport", "urlsession"], "NIO transport"),
            // A negative number is the value, said wrong; not a missing value and a flag.
            (["proxy", "--body-cap", "-1"], "--body-cap -1: expected a number of bytes, 0 or more"),
            (["run", "--body-cap", "-1", "x.json"], "--body-cap -1: expected a number of bytes, 0 or more"),
        ]
        for (arguments, named) in cases {
            let result = try reqtop(arguments, timeout: 30)
            XCTAssertEqual(result.status, 2, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains(named), "\(arguments): \(result.stderr)")
        }
        // A key someone opened to others is refused by name, and nothing listens.
        let home = try makeTemporaryFolder("proxy-badkey")
        XCTAssertEqual(try reqtop(["proxy", "--ca", "--ca-dir", home + "/ca"]).status, 0)
        chmod(home + "/ca/ca-key.pem", 0o644)
        let refused = try reqtop(["proxy", "--no-tui", "--ca-dir", home + "/ca", "--port", "0"], timeout: 30)
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.contains("ca-key.pem is open to other users"), refused.stderr)
    }

    /// Debian's Python (the one `.ci/run` installs grpcio for), its output whole.
    private func runPython(_ arguments: [String], environment: [String: String] = [:]) throws -> ReqtopRun {
        try runTool("/usr/bin/python3", arguments, timeout: 60, environment: environment)
    }

    func testTheHeadlessProxyServesCurlAsAUserWhoIsNotRootAndStopsOnSIGTERM() throws {
        let upstream = try FaultServer.start()
        defer { upstream.stop() }
        let home = try home()
        let (port, stop) = try launchProxy([], unprivileged: true, home: home)
        XCTAssertEqual(try curl(["-x", "http://127.0.0.1:\(port)", upstream.baseURL.absoluteString + "/status/200"], unprivileged: true), "status 200\n")
        let ended = stop()
        XCTAssertEqual(ended.status, 0, ended.stderr)
        XCTAssertTrue(ended.stderr.contains("made a certificate authority for this machine in \(home)/.config/reqtop/ca"), ended.stderr)
        XCTAssertTrue(ended.stderr.contains("proxy listening on http://127.0.0.1:\(port)"), ended.stderr)
        // c1-r1 or c2-r1: the test's probe for the port is a connection too, numbered unless it
        // was gone before the proxy could ask the kernel whose it was (then refused, unnumbered).
        XCTAssertTrue(ended.stdout.contains(#"-r1","attempt":1,"event":"finished","outcome":"success","status":200"#), ended.stdout)
    }

    func testAConfigRetriesOnlyWhatIsSafeToRepeatAndFaultsAreInjected() throws {
        let upstream = try FaultServer.start()
        defer { upstream.stop() }
        let folder = try makeTemporaryFolder("proxy-config")
        try #"{"retry": {"maxAttempts": 3, "baseDelay": 0.05}, "timeout": 5}"#.write(toFile: folder + "/config.json", atomically: true, encoding: .utf8)
        try #"{"faults": [{"match": "path:/broken", "status": 503}]}"#.write(toFile: folder + "/faults.json", atomically: true, encoding: .utf8)
        let (port, stop) = try launchProxy(["--config", folder + "/config.json", "--faults", folder + "/faults.json", "--ca-dir", folder + "/ca"],
                                           unprivileged: false, home: folder)
        let proxy = "http://127.0.0.1:\(port)", base = upstream.baseURL.absoluteString
        // A GET fails twice, then succeeds: retried, and the client sees only the success.
        XCTAssertEqual(try curl(["-o", "/dev/null", "-w", "%{http_code}", "-x", proxy, base + "/flaky/get?failures=2"]), "200")
        // A POST is not repeated behind the client's back…
        XCTAssertEqual(try curl(["-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-x", proxy, base + "/flaky/post?failures=2"]), "503")
        // …unless it carries an Idempotency-Key.
        XCTAssertEqual(try curl(["-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "Idempotency-Key: k-1", "-x", proxy, base + "/flaky/keyed?failures=2"]), "200")
        // The fault file's rule answers for the upstream, marked.
        let injected = try curl(["-i", "-x", proxy, base + "/broken"])
        XCTAssertTrue(injected.hasPrefix("HTTP/1.1 503") && injected.contains("X-Reqtop-Injected: true"), injected)
        let ended = stop()
        XCTAssertEqual(ended.status, 0, ended.stderr)
        XCTAssertTrue(ended.stderr.contains("FAULTS ON: 1 rule"), ended.stderr)
        let attempts = ended.events.filter { $0["event"] as? String == "taskCreated" }.count
        // 3 for the GET, 1 for the POST, 3 for the keyed POST, and 3 for the injected 503, retried
        // as the server's own would be (the injected attempts send nothing).
        XCTAssertEqual(attempts, 3 + 1 + 3 + 3)
    }

    /// A fault that answers a gRPC call as a failing server does (`grpcStatus`): grpcio sees
    /// UNAVAILABLE with the message, and no server was asked (none listens there).
    func testAGRPCFaultAnswersACallWithItsStatus() throws {
        guard (try? runPython(["-c", "import grpc"]).status) == 0 else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail("python3-grpcio is missing: .ci/run installs it") }
            throw XCTSkip("python3-grpcio is not installed")
        }
        let folder = try makeTemporaryFolder("proxy-grpc-fault")
        try #"{"faults": [{"match": "path:/shop.Orders/Find", "grpcStatus": 14, "grpcMessage": "backend down (100%)"}]}"#
            .write(toFile: folder + "/faults.json", atomically: true, encoding: .utf8)
        let (port, stop) = try launchProxy(["--faults", folder + "/faults.json", "--ca-dir", folder + "/ca"], unprivileged: false, home: folder)
        let client = try runPython(["-c", """
            import grpc, sys
            channel = grpc.secure_channel("localhost:1", grpc.ssl_channel_credentials(root_certificates=open(sys.argv[1], "rb").read()))
            try:
                channel.unary_unary("/shop.Orders/Find")(b"", timeout=20); print("no error")
            except grpc.RpcError as error:
                print(error.code().name, error.details())
            """, folder + "/ca/ca.pem"], environment: ["https_proxy": "http://127.0.0.1:\(port)", "no_proxy": "", "NO_PROXY": ""])
        XCTAssertEqual(client.stdout, "UNAVAILABLE backend down (100%)\n", client.stderr)
        let ended = stop()
        XCTAssertTrue(ended.events.contains { $0["event"] as? String == "injected" }, "the answer is marked as reqtop's")
    }

    /// gRPC calls recorded through the proxy are answered again by `serve --from --tls` over
    /// HTTP/2, their status as a trailer or in a trailers-only head, as the server sent it.
    func testARecordedGRPCCallIsServedAsRecorded() throws {
        guard (try? runPython(["-c", "import grpc"]).status) == 0 else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail("python3-grpcio is missing: .ci/run installs it") }
            throw XCTSkip("python3-grpcio is not installed")
        }
        let folder = try makeTemporaryFolder("proxy-grpc-record")
        let pki = try TestCertificates.make()
        defer { pki.remove() }
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        server.arguments = ["-c", """
            import grpc, sys, time
            from concurrent import futures
            def find(request, context): return b"\\x0a\\x03pen" + request
            def fail(request, context): context.abort(grpc.StatusCode.NOT_FOUND, "no such order")
            handler = grpc.method_handlers_generic_handler("shop.Orders", {
                "Find": grpc.unary_unary_rpc_method_handler(find), "Gone": grpc.unary_unary_rpc_method_handler(fail)})
            server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
            server.add_generic_rpc_handlers((handler,))
            port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([(open(sys.argv[2], "rb").read(), open(sys.argv[1], "rb").read())]))
            server.start(); print(port, flush=True); time.sleep(60)
            """, pki.serverCertificateFile, pki.serverKeyFile]
        let serverOut = Pipe()
        server.standardOutput = serverOut
        try server.run()
        defer { server.terminate(); server.waitUntilExit() }
        let grpcPort = try XCTUnwrap(Int(String(decoding: serverOut.fileHandleForReading.availableData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        let client = """
            import grpc, sys
            channel = grpc.secure_channel("localhost:" + sys.argv[1], grpc.ssl_channel_credentials(root_certificates=open(sys.argv[2], "rb").read()))
            for method, request in (("Find", b"\\x10\\x07"), ("Gone", b"")):
                try: print(method, channel.unary_unary("/shop.Orders/" + method)(request, timeout=20))
                except grpc.RpcError as error: print(method, error.code().name, error.details())
            """
        let recording = folder + "/calls.jsonl"
        let (port, stop) = try launchProxy(["--record", recording, "--ca-dir", folder + "/ca", "--cacert", pki.caFile], unprivileged: false, home: folder)
        let live = try runPython(["-c", client, String(grpcPort), folder + "/ca/ca.pem"],
                                 environment: ["https_proxy": "http://127.0.0.1:\(port)", "no_proxy": "", "NO_PROXY": ""])
        let expected = "Find b'\\n\\x03pen\\x10\\x07'\nGone NOT_FOUND no such order\n"
        XCTAssertEqual(live.stdout, expected, live.stderr)
        XCTAssertEqual(stop().status, 0)

        let served = try AttachTests.launch(["serve", "--from", recording, "--tls"], runtimeDirectory: NSTemporaryDirectory())
        defer { served.process.terminate(); served.process.waitUntilExit() }
        AttachTests.waitFor("the server's URL and authority") { served.stdout().contains("(for --cacert):") }
        let lines = served.stdout().split(separator: "\n").map(String.init)
        let servedPort = try XCTUnwrap(lines.first?.split(separator: ":").last.map(String.init))
        let authority = try XCTUnwrap(lines.first { $0.contains("(for --cacert):") }?.split(separator: " ").last.map(String.init))
        let again = try runPython(["-c", client, servedPort, authority])
        XCTAssertEqual(again.stdout, expected, "answered as recorded: the message, and each call's status: \(again.stderr)")

        // whatif sends the calls again (their messages kept whole as they streamed) and
        // judges each by its gRPC status, as the proxy did: the same run.
        let whatIf = try reqtop(["whatif", recording, "--record", folder + "/again.jsonl"], timeout: 60)
        XCTAssertEqual(whatIf.status, 0, whatIf.stdout + whatIf.stderr)
        XCTAssertFalse(whatIf.stderr.contains("not sent again"), whatIf.stderr)
        XCTAssertTrue(whatIf.stdout.contains("attempts sent upstream 2 → 2") && whatIf.stdout.contains(", 0 unexplained differences"), whatIf.stdout)
    }

    func testAHostsOwnSettingsOverTheFilesAndBadOnesNamed() throws {
        let upstream = try FaultServer.start()
        defer { upstream.stop() }
        let folder = try makeTemporaryFolder("proxy-hosts")
        // Nothing is retried, except for 127.0.0.1, which gets three attempts.
        try #"{"retry": {"maxAttempts": 1}, "hosts": {"127.0.0.1": {"retry": {"maxAttempts": 3, "baseDelay": 0.05}}, "*.example.com": {"timeout": 2}}}"#
            .write(toFile: folder + "/config.json", atomically: true, encoding: .utf8)
        let (port, stop) = try launchProxy(["--config", folder + "/config.json", "--ca-dir", folder + "/ca"], unprivileged: false, home: folder)
        XCTAssertEqual(try curl(["-o", "/dev/null", "-w", "%{http_code}", "-x", "http://127.0.0.1:\(port)", upstream.baseURL.absoluteString + "/flaky/host?failures=2"]), "200")
        // localhost is the same server by another name: the file's own setting, one attempt.
        let other = upstream.baseURL.absoluteString.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        XCTAssertEqual(try curl(["-o", "/dev/null", "-w", "%{http_code}", "-x", "http://127.0.0.1:\(port)", other + "/flaky/name?failures=2"]), "503")
        XCTAssertEqual(stop().status, 0)

        try #"{"hosts": {"api.test": {"circuitBreaker": false}}}"#.write(toFile: folder + "/bad.json", atomically: true, encoding: .utf8)
        let refused = try reqtop(["proxy", "--no-tui", "--config", folder + "/bad.json"], timeout: 30)
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.contains("hosts.api.test.circuitBreaker: not a per-host setting"), refused.stderr)
        try #"{"hosts": {"api.test": {"retry": {"maxAttempts": "three"}}}}"#.write(toFile: folder + "/bad2.json", atomically: true, encoding: .utf8)
        let wrong = try reqtop(["proxy", "--no-tui", "--config", folder + "/bad2.json"], timeout: 30)
        XCTAssertEqual(wrong.status, 2)
        XCTAssertTrue(wrong.stderr.contains("hosts.api.test.retry.maxAttempts"), wrong.stderr)
    }

    /// Certificates made now, a fault server with TLS on them and a plain one, stopped and
    /// removed at the end of the test.
    private func upstreams() throws -> (pki: TestCertificates, secure: FaultServer, plain: FaultServer) {
        let pki = try TestCertificates.make()
        let secure = try FaultServer.start(tls: pki)
        let plain = try FaultServer.start()
        addTeardownBlock {
            plain.stop()
            secure.stop()
            pki.remove()
        }
        return (pki, secure, plain)
    }

    func testARecordedTunnelIsARowThatWhatIfLeavesOut() throws {
        let (pki, secure, plain) = try upstreams()
        let folder = try makeTemporaryFolder("proxy-tunnel")
        let recording = folder + "/proxied.jsonl"
        let (port, stop) = try launchProxy(["--tunnel", "localhost", "--record", recording, "--ca-dir", folder + "/ca"], unprivileged: false, home: folder)
        let proxy = "http://127.0.0.1:\(port)"
        XCTAssertEqual(try curl(["--cacert", pki.caFile, "-x", proxy, "https://localhost:\(secure.port)/status/200"]), "status 200\n")
        XCTAssertEqual(try curl(["-x", proxy, plain.baseURL.absoluteString + "/status/200"]), "status 200\n")
        XCTAssertEqual(stop().status, 0)
        let whatIf = try reqtop(["whatif", recording, "--record", folder + "/again.jsonl"], timeout: 60)
        XCTAssertTrue(whatIf.stderr.contains("not sent again: a tunnel (CONNECT)"), whatIf.stderr)
        XCTAssertEqual(whatIf.status, 0, "the tunnel is not compared; the request is the same again: \(whatIf.stdout)\(whatIf.stderr)")
    }

    /// A proxy recording keeps its transparent settings (no redirect followed, every answer
    /// relayed), so the unchanged what-if of a 302, a 404 and a 503 is the same run again:
    /// exit 0, nothing unexplained. (It followed the 302 and judged the 404 a failure.)
    func testTheUnchangedWhatIfOfAProxyRecordingIsTheSameRun() throws {
        let (_, _, plain) = try upstreams()
        let folder = try makeTemporaryFolder("proxy-whatif")
        let recording = folder + "/proxied.jsonl"
        let (port, stop) = try launchProxy(["--record", recording, "--ca-dir", folder + "/ca"], unprivileged: false, home: folder)
        let proxy = "http://127.0.0.1:\(port)"
        let base = plain.baseURL.absoluteString
        XCTAssertEqual(try curl(["-x", proxy, base + "/status/200"]), "status 200\n")
        _ = try curl(["-x", proxy, base + "/redirect/2"])
        XCTAssertEqual(try curl(["-x", proxy, base + "/status/404"]), "status 404\n")
        XCTAssertEqual(try curl(["-x", proxy, base + "/status/503?retry-after=30"]), "status 503\n")
        // Stopped at once: the proxy ends an operation a moment after its client has the whole
        // answer, and a stop lets it end so (a cancel there once recorded `cancelled 503`).
        XCTAssertEqual(stop().status, 0)
        let recorded = try String(contentsOfFile: recording, encoding: .utf8)
        XCTAssertTrue(recorded.contains("\"maxRedirects\":0"), "the recording says no redirect was followed")
        XCTAssertTrue(recorded.contains("\"relaysEveryAnswer\":true"), "and that every answer was relayed")
        let started = Date()
        let whatIf = try reqtop(["whatif", recording, "--record", folder + "/again.jsonl"], timeout: 60)
        XCTAssertEqual(whatIf.status, 0, "the same run again: \(whatIf.stdout)\(whatIf.stderr)")
        XCTAssertTrue(whatIf.stdout.contains("0 unexplained differences"), whatIf.stdout)
        XCTAssertLessThan(Date().timeIntervalSince(started), 25, "no wait on the 503's Retry-After: one attempt, as the client made")
        let again = try String(contentsOfFile: folder + "/again.jsonl", encoding: .utf8)
        XCTAssertEqual(again.components(separatedBy: "\"outcome\":\"relayed\"").count - 1, 3, "302, 404 and 503 relayed again")
    }

    /// A proxy's HAR holds each head as it was said: the client's fields in its order, each
    /// repeat an entry, names as spelled (read with Python's json, not our reader).
    func testAProxyHARHoldsTheHeadsAsTheyWereSaid() throws {
        let (_, _, plain) = try upstreams()
        let folder = try makeTemporaryFolder("proxy-har-order")
        let recording = folder + "/proxied.har"
        let (port, stop) = try launchProxy(["--record", recording, "--ca-dir", folder + "/ca"], unprivileged: false, home: folder)
        _ = try curl(["-x", "http://127.0.0.1:\(port)", "-H", "X-Zeta: 1", "-H", "X-Alpha: 2", "-H", "X-Dup: a", "-H", "X-MiXeD-Case: 3",
                      "-H", "X-Dup: b", plain.baseURL.absoluteString + "/status/200"])
        XCTAssertEqual(stop().status, 0)
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = ["-c", """
            import json, sys
            entry = json.load(open(sys.argv[1]))["log"]["entries"][0]
            print("|".join(h["name"] + "=" + h["value"] for h in entry["request"]["headers"] if h["name"].lower().startswith("x-")))
            """, recording]
        let out = Pipe()
        python.standardOutput = out
        try python.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        python.waitUntilExit()
        XCTAssertEqual(printed.trimmingCharacters(in: .whitespacesAndNewlines), "X-Zeta=1|X-Alpha=2|X-Dup=a|X-MiXeD-Case=3|X-Dup=b")
    }

    /// The proxy raises its soft limit on open files to the hard one as it starts (a soft 1,024
    /// cut it off at about 500 clients), and caps its connections by what that carries.
    func testTheDescriptorLimitIsRaisedToTheHardOne() throws {
        let folder = try makeTemporaryFolder("proxy-limit")
        let proxy = try startProxy(["--ca-dir", folder + "/ca"], unprivileged: false, home: folder, softLimit: 200)
        let limits = (try? String(contentsOfFile: "/proc/\(proxy.pid)/limits", encoding: .utf8)) ?? ""
        XCTAssertEqual(proxy.stop().status, 0)
        let line = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }.map(String.init) ?? ""
        // "Max open files  <soft>  <hard>  files"
        let fields = line.split(separator: " ").map(String.init)
        XCTAssertEqual(fields.count, 6, line)
        XCTAssertEqual(fields.dropFirst(3).first, fields.dropFirst(4).first, "soft raised to hard: \(line)")
        XCTAssertNotEqual(fields.dropFirst(3).first, "200", line)
        XCTAssertEqual(DescriptorLimit.connectionCap(descriptors: 1024), 480)
        XCTAssertEqual(DescriptorLimit.connectionCap(descriptors: 20), 16)
    }

    /// `--insecure` is said where the session's story is kept: the header of stdout's event
    /// log and of the recording, as well as each attempt's `taskCreated`.
    func testInsecureIsInTheSessionLineAndTheRecording() throws {
        let (_, _, plain) = try upstreams()
        let folder = try makeTemporaryFolder("proxy-insecure")
        let recording = folder + "/insecure.jsonl"
        let (port, stop) = try launchProxy(["--insecure", "--record", recording, "--ca-dir", folder + "/ca"], unprivileged: false, home: folder)
        XCTAssertEqual(try curl(["-x", "http://127.0.0.1:\(port)", plain.baseURL.absoluteString + "/status/200"]), "status 200\n")
        let run = stop()
        XCTAssertEqual(run.status, 0, run.stderr)
        let stdoutHeader = run.stdout.split(separator: "\n").first.map(String.init) ?? ""
        let recorded = try String(contentsOfFile: recording, encoding: .utf8)
        let recordedHeader = recorded.split(separator: "\n").first.map(String.init) ?? ""
        for header in [stdoutHeader, recordedHeader] {
            let object = try JSONSerialization.jsonObject(with: Data(header.utf8)) as? [String: Any]
            XCTAssertEqual(object?["event"] as? String, "session", header)
            XCTAssertEqual(object?["insecure"] as? Bool, true, header)
        }
        XCTAssertTrue(recorded.contains("\"insecure\":true,") || recorded.contains("\"insecure\":true}"), "taskCreated too")
    }

    /// `--proxy`: what the proxy sends upstream goes through the chained proxy — its requests
    /// (plain and intercepted HTTPS) and its tunnels, each seen in tinyproxy's log — and a
    /// chained proxy that cannot be reached is a 502 that names it.
    func testAChainedProxyCarriesRequestsAndTunnelsAndARefusalIsNamed() throws {
        let (chain, log) = try ProxyTests.startTinyproxy(for: self)
        let (pki, secure, plain) = try upstreams()
        let folder = try makeTemporaryFolder("proxy-chain")
        let (port, stop) = try launchProxy(["--proxy", "http://127.0.0.1:\(chain)", "--tunnel", "localhost", "--cacert", pki.caFile,
                                            "--ca-dir", folder + "/ca"], unprivileged: false, home: folder)
        let proxy = "http://127.0.0.1:\(port)"
        XCTAssertEqual(try curl(["-x", proxy, plain.baseURL.absoluteString + "/status/200"]), "status 200\n", "plain http")
        XCTAssertEqual(try curl(["--cacert", pki.caFile, "-x", proxy, "https://localhost:\(secure.port)/status/201"]), "status 201\n", "a tunnel")
        XCTAssertEqual(try curl(["--cacert", folder + "/ca/ca.pem", "-x", proxy, "https://127.0.0.1:\(secure.port)/status/202"]), "status 202\n",
                       "intercepted https")
        let ended = stop()
        XCTAssertEqual(ended.status, 0, ended.stderr)
        XCTAssertTrue(ended.stderr.contains("goes through http://127.0.0.1:\(chain)"), ended.stderr)
        let seen = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        // AsyncHTTPClient reaches a proxy's http:// targets with a CONNECT too.
        XCTAssertTrue(seen.contains("CONNECT 127.0.0.1:\(plain.port) "), "the request went through the chain: \(seen)")
        XCTAssertTrue(seen.contains("CONNECT localhost:\(secure.port) "), "the tunnel went through the chain: \(seen)")
        XCTAssertTrue(seen.contains("CONNECT 127.0.0.1:\(secure.port) "), "the intercepted request went through the chain: \(seen)")

        // Nothing listens where the chain points: the tunnel is refused with why.
        let closed = try ProxyTests.freePort()
        let (second, stopSecond) = try launchProxy(["--proxy", "127.0.0.1:\(closed)", "--no-intercept"], unprivileged: false, home: folder)
        let refusal = try curl(["-p", "-x", "http://127.0.0.1:\(second)", "-w", "%{http_connect}", "-o", "/dev/null", "https://localhost:\(secure.port)/"])
        XCTAssertEqual(refusal, "502")
        // A plain request the transport could not send through it says the chain, not only
        // the address (the chain's), which a person would take for the host's.
        let plainRefusal = try curl(["-x", "http://127.0.0.1:\(second)", plain.baseURL.absoluteString + "/status/200"])
        XCTAssertTrue(plainRefusal.hasPrefix("reqtop proxy: through the chained proxy 127.0.0.1:\(closed): "), plainRefusal)
        let secondEnded = stopSecond()
        XCTAssertEqual(secondEnded.status, 0, secondEnded.stderr)

        // The chain cannot be the proxy itself.
        let loop = try reqtop(["proxy", "--no-tui", "--port", "18099", "--proxy", "http://127.0.0.1:18099"], timeout: 30)
        XCTAssertEqual(loop.status, 2)
        XCTAssertTrue(loop.stderr.contains("is this proxy itself"), loop.stderr)
    }
}
