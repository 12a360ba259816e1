import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Testing

/// A server's redirect never takes a credential to another origin and never reaches a local
/// resource, on every transport: the engine judges each redirect (``RedirectSafety``) before
/// any transport follows it. Real servers on loopback: one that redirects, one on another
/// port (another origin) and one on a Unix socket.
@Suite("Redirect safety on each transport", .serialized)
struct RedirectSafetyTests {
    private let secrets = ["Authorization": "Bearer SEKRET", "Cookie": "sid=SEKRET", "X-Api-Key": "SEKRET",
                           "X-Request-Id": "kept-123"]

    private func request(_ url: URL) -> URLRequest {
        var request = URLRequest(url: url)
        for (name, value) in secrets { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// `/redirect-to` on `server` sending the client to `location`.
    private func redirect(on server: FaultServer, to location: String, status: Int = 302) -> URL {
        var components = URLComponents(url: server.url("/redirect-to"), resolvingAgainstBaseURL: false)!
        components.queryItems = [URLQueryItem(name: "url", value: location), URLQueryItem(name: "status", value: "\(status)")]
        // `+` means a space in a query: a scheme such as http+unix must keep its plus.
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        return components.url!
    }

    /// The operation's result, whether it succeeded or not.
    private func run(_ queue: RequestQueue, _ request: URLRequest, id: String, options: RequestOptions = RequestOptions()) async -> RequestResult? {
        do {
            return try await queue.response(for: request, id: id, options: options)
        } catch let error as RequestError {
            return error.result
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    private func redirects(_ recorder: EventRecorder, _ id: String) -> [RequestEvent.Payload] {
        recorder.events(of: id).map(\.payload).filter { if case .redirect = $0 { true } else { false } }
    }

    @Test(arguments: TransportKind.allCases)
    func credentialsAreDroppedWhenARedirectLeavesTheOrigin(_ kind: TransportKind) async throws {
        let origin = try FaultServer.start()
        let elsewhere = try FaultServer.start()
        defer { origin.stop(); elsewhere.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let result = await run(queue, request(redirect(on: origin, to: elsewhere.url("/echo").absoluteString)), id: "leaves")
        #expect(result?.status == 200)
        let arrived = try #require(elsewhere.counters.requests("/echo").first).headers
        #expect(arrived["authorization"] == nil)
        #expect(arrived["cookie"] == nil)
        #expect(arrived["x-api-key"] == nil)
        #expect(arrived["x-request-id"] == "kept-123", "headers that are no credential still follow")
        #expect(redirects(recorder, "leaves") == [.redirect(status: 302, location: elsewhere.url("/echo").absoluteString,
                                                            dropped: ["authorization", "cookie", "x-api-key"])])
    }

    @Test(arguments: TransportKind.allCases)
    func credentialsStayOnARedirectWithinTheOrigin(_ kind: TransportKind) async throws {
        let origin = try FaultServer.start()
        defer { origin.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let result = await run(queue, request(redirect(on: origin, to: "/echo", status: 307)), id: "stays")
        #expect(result?.status == 200)
        let arrived = try #require(origin.counters.requests("/echo").first).headers
        #expect(arrived["authorization"] == "Bearer SEKRET")
        #expect(arrived["x-api-key"] == "SEKRET")
        #expect(redirects(recorder, "stays") == [.redirect(status: 307, location: origin.url("/echo").absoluteString)])
    }

    /// `http+unix://` is how AsyncHTTPClient names a Unix socket: a server's `Location` must
    /// never send a request (with its credentials) into one, such as Docker's.
    @Test(arguments: TransportKind.allCases)
    func aRedirectIntoAUnixSocketIsRefused(_ kind: TransportKind) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reqtop-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let local = try FaultServer.start(unixSocketPath: directory.appendingPathComponent("sock").path)
        let origin = try FaultServer.start()
        defer { origin.stop(); local.stop() }
        let target = local.baseURL.absoluteString + "/secret"
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let result = await run(queue, request(redirect(on: origin, to: target, status: 307)), id: "unix")
        #expect(result?.outcome == .failure)
        #expect(local.counters.totalHits == 0, "nothing may reach the local socket")
        #expect(local.counters.requests("/secret").isEmpty)
        // URLSession may refuse the scheme itself before asking; where the engine is asked, it says why.
        for case .redirect(_, _, _, let refused) in redirects(recorder, "unix") {
            #expect(refused?.contains("http+unix") == true)
        }
        if kind == .nio {
            #expect(redirects(recorder, "unix").count == 1, "AsyncHTTPClient asks the engine")
            let completed = recorder.events(of: "unix").compactMap { if case .taskCompleted(let error) = $0.payload { error } else { nil } }
            #expect(completed.last?.code == URLError.Code.unsupportedURL.rawValue)
        }
    }

    @Test func judgingARedirect() {
        var next = RequestMessage(url: URL(string: "https://api.example:443/b")!)
        next.setValue("Bearer x", forField: "Authorization")
        next.setValue("t", forField: "X-Auth-Token")
        next.setValue("json", forField: "Accept")
        next.setValue("api.example", forField: "Host")
        // The same origin, with the default port spelt out.
        guard case .follow(let same, let none) = RedirectSafety.judge(next, original: URL(string: "https://API.example/a")) else {
            Issue.record("refused the same origin")
            return
        }
        #expect(none.isEmpty)
        #expect(same.headerFields == next.headerFields)
        // Another port, host or scheme: another origin.
        for original in ["https://api.example:8443/a", "https://other.example/a", "http://api.example:443/a"] {
            guard case .follow(let followed, let dropped) = RedirectSafety.judge(next, original: URL(string: original)) else {
                Issue.record("refused \(original)")
                continue
            }
            #expect(dropped == ["authorization", "x-auth-token"], "\(original)")
            #expect(followed.value(forField: "Authorization") == nil)
            #expect(followed.value(forField: "Accept") == "json")
            #expect(followed.joinedByName.map(\.name) == ["Accept"], "the fields left in their order; the Host left to the transport")
        }
        for location in ["http+unix://%2Fvar%2Frun%2Fdocker.sock/x", "unix:///tmp/s", "file:///etc/passwd", "ftp://h/x"] {
            let verdict = RedirectSafety.judge(RequestMessage(url: URL(string: location)!), original: URL(string: "http://h/"))
            guard case .refuse = verdict else {
                Issue.record("followed \(location)")
                continue
            }
        }
    }

    /// The redirect policy: how many, none, or the program's own word, on every transport.
    @Test(arguments: TransportKind.allCases)
    func theRedirectPolicyLimitsStopsOrAsks(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let once = RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy(maxAttempts: 1))

        var limited = once
        limited.redirects = .follow(max: 2)
        let tooMany = await run(queue, URLRequest(url: server.url("/redirect/5")), id: "too-many", options: limited)
        #expect(tooMany?.outcome == .failure)
        #expect(tooMany?.attempts.last?.failure == .transport(.httpTooManyRedirects))
        #expect(redirects(recorder, "too-many").count == 3, "two followed, the third refused")

        var none = once
        none.redirects = .none
        none.validator = StandardResponseValidator(acceptableStatusCodes: Set(200..<400))
        let answer = await run(queue, URLRequest(url: server.url("/redirect/1")), id: "none", options: none)
        #expect(answer?.status == 302, "the 3xx is the answer")
        #expect(answer?.outcome == .success)

        var asked = none
        asked.redirects = RedirectPolicy(max: 10) { _, next in next.url?.path == "/redirect/2" ? next : nil }
        let stopped = await run(queue, URLRequest(url: server.url("/redirect/3")), id: "asked", options: asked)
        #expect(stopped?.status == 302)
        #expect(redirects(recorder, "asked").count == 2, "one followed, then the program said stop")
        #expect(server.counters.hits("/redirect/0") == 0)
    }

    @Test func aDowngradeIsRefusedUnlessAllowed() {
        let https = URL(string: "https://h/a"), http = URL(string: "http://h/b")
        guard case .fail(.unsupportedURL, _) = RedirectPolicy.follow().judge(number: 1, from: https, to: http) else {
            Issue.record("https to http followed")
            return
        }
        #expect(RedirectPolicy.follow(allowsDowngrade: true).judge(number: 1, from: https, to: http) == .follow)
        #expect(RedirectPolicy.follow().judge(number: 1, from: http, to: https) == .follow)
        #expect(RedirectPolicy.none.judge(number: 1, from: http, to: http) == .stop)
    }

    /// A 307/308 re-sends the body: a Data body goes again whole; a stream body, read once,
    /// cannot, and the attempt ends with -1021 and that reason (before, NIO sent an empty one).
    @Test(arguments: TransportKind.allCases)
    func aTemporaryRedirectSendsTheBodyAgainOrSaysWhyItCannot(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let body = Data(#"{"order":42}"#.utf8)
        var whole = URLRequest(url: redirect(on: server, to: server.url("/echo").absoluteString, status: 307))
        whole.httpMethod = "POST"
        whole.httpBody = body
        let resent = await run(queue, whole, id: "data", options: RequestOptions(retryPolicy: .never))
        switch kind {
        case .nio:
            #expect(resent?.status == 200)
            #expect(server.counters.requests("/echo").last?.body == body, "the 307 sent the same body to its target")
        case .urlsession:
            // FoundationNetworking would send it without the body: refused, by name.
            #expect(resent?.status == nil)
            #expect(server.counters.requests("/echo").isEmpty, "no empty body was sent in its place")
            #expect(recorder.events(of: "data").contains { event in
                if case .redirect(307, _, _, let reason?) = event.payload { reason.contains("would send it empty") } else { false }
            })
        }

        var streamed = whole
        streamed.httpBody = nil
        streamed.httpBodyStream = InputStream(data: body)
        let before = server.counters.requests("/echo").count
        let refused = await run(queue, streamed, id: "stream", options: RequestOptions(retryPolicy: .never))
        #expect(refused?.status == nil)
        #expect(server.counters.requests("/echo").count == before, "nothing, and no empty body, was sent to the target")
        let events = redirects(recorder, "stream")
        guard case .redirect(307, _, _, let reason?) = events.first else {
            Issue.record("the redirect event says why it was not followed: \(events)")
            return
        }
        #expect(reason.contains("cannot be read twice"))
        let completed = recorder.errors(of: "stream")
        #expect(completed.last?.code == URLError.Code.requestBodyStreamExhausted.rawValue)
    }
}
