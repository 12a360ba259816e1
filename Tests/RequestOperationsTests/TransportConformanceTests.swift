import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import RequestTransportNIO
import Synchronization
import Testing

/// The engine's behaviour on every transport it has: each test runs once per transport
/// (Swift Testing's arguments), against the fault server, and must give the same events,
/// attempts and outcomes.
enum TransportKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case urlsession, nio

    var testDescription: String { rawValue }

    /// A transport of its own for each test, so routed-task counts are the test's alone.
    func make() -> RequestTransport {
        switch self {
        case .urlsession: SharedSession()
        case .nio: NIOTransport.shared
        }
    }
}

@Suite("Engine behaviour on each transport", .serialized)
struct TransportConformanceTests {
    private func queue(_ kind: TransportKind, _ limit: Int = 6) -> RequestQueue {
        RequestQueue(maxConcurrentRequests: limit, transport: kind.make(), earlyRetry: nil)
    }

    private func names(_ recorder: EventRecorder, _ id: String) -> [String] {
        recorder.names(of: id)
    }

    @Test(arguments: TransportKind.allCases)
    func aSuccessHasTheUsualEventsAndItsBody(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = queue(kind)
        let recorder = EventRecorder(queue.events)
        let result = try await queue.response(for: URLRequest(url: server.url("/bytes/70000?seed=3")), id: "download")
        #expect(result.status == 200)
        #expect(Array(result.data) == FaultServer.expectedBytes(count: 70_000, seed: 3))
        let names = names(recorder, "download")
        #expect(names.first == "queued")
        #expect(Array(names.suffix(2)) == ["taskCompleted", "finished"])
        #expect(names.filter { $0 == "data" }.count >= 1, "the body streams as data events")
        #expect(recorder.events(of: "download").compactMap { if case .data(let n) = $0.payload { n } else { nil } }.reduce(0, +) == 70_000)
    }

    /// The NIO transport says when the request was written whole (`sent`), which splits the
    /// attempt into send and wait; URLSession on Linux cannot, and publishes nothing.
    @Test(arguments: TransportKind.allCases)
    func theMomentTheRequestWasWrittenIsAnEventWhereTheTransportKnowsIt(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = queue(kind)
        let recorder = EventRecorder(queue.events)
        let result = try await queue.response(for: URLRequest(url: server.url("/delay/50")), id: "timed")
        let names = names(recorder, "timed")
        switch kind {
        case .nio:
            #expect(names == ["queued", "started", "taskCreated", "connection", "sent", "response", "data", "responseBody", "taskCompleted", "finished"], "\(names)")
            let attempt = try #require(result.attempts.first)
            let sent = try #require(attempt.requestSentAt)
            let response = try #require(attempt.responseAt)
            #expect(response - sent >= 0.04, "the server's 50 ms are wait, after the send")
        case .urlsession:
            #expect(!names.contains("sent"))
            #expect(result.attempts.first?.requestSentAt == nil)
        }
    }

    /// The NIO transport says which connection each request was given and whether it was
    /// new: one after another to one host, the second reuses the first's; a request to
    /// another server opens its own. URLSession on Linux cannot tell, and publishes nothing.
    @Test(arguments: TransportKind.allCases)
    func theConnectionARequestWentOutOnIsAnEventWhereTheTransportKnowsIt(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        let other = try FaultServer.start()
        defer { server.stop(); other.stop() }
        let queue = queue(kind)
        let recorder = EventRecorder(queue.events)
        for id in ["first", "second"] {
            _ = try await queue.response(for: URLRequest(url: server.url("/echo")), id: id)
        }
        _ = try await queue.response(for: URLRequest(url: other.url("/echo")), id: "elsewhere")
        func connection(_ id: String) -> (id: Int, reused: Bool)? {
            recorder.events(of: id).lazy.compactMap { event -> (Int, Bool)? in
                if case .connection(let connection, let reused, _) = event.payload { (connection, reused) } else { nil }
            }.first
        }
        switch kind {
        case .nio:
            let first = try #require(connection("first"))
            let second = try #require(connection("second"))
            let elsewhere = try #require(connection("elsewhere"))
            #expect(!first.reused, "the first request to a server opens a connection")
            #expect(second.reused && second.id == first.id, "the next one, after the first ended, takes the same connection: \(second)")
            #expect(!elsewhere.reused && elsewhere.id != first.id, "another server, another connection: \(elsewhere)")
            #expect(names(recorder, "second").firstIndex(of: "connection")! < names(recorder, "second").firstIndex(of: "sent")!)
        case .urlsession:
            #expect(connection("first") == nil && connection("second") == nil)
        }
    }

    @Test(arguments: TransportKind.allCases)
    func aBodyIsSentAndRedirectsAreEventsTheOperationAnswers(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = queue(kind)
        let recorder = EventRecorder(queue.events)
        var post = URLRequest(url: server.url("/echo"))
        post.httpMethod = "POST"
        post.httpBody = Data(#"{"a":1}"#.utf8)
        post.setValue("application/json", forHTTPHeaderField: "Content-Type")
        _ = try await queue.response(for: post, id: "post")
        #expect(server.counters.requests("/echo").last?.body == Data(#"{"a":1}"#.utf8))
        let redirected = try await queue.response(for: URLRequest(url: server.url("/redirect/3")), id: "hops")
        #expect(redirected.status == 200)
        #expect(names(recorder, "hops").filter { $0 == "redirect" }.count == 3)
    }

    @Test(arguments: TransportKind.allCases)
    func statusesAndRetryAfterAreRetriedAsThePolicySays(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = queue(kind)
        let recorder = EventRecorder(queue.events)
        let policy = ExponentialBackoffRetryPolicy(maxAttempts: 3, baseDelay: 0.02, jitter: .none)
        let result = try await queue.response(for: URLRequest(url: server.url("/flaky/\(kind)-503?failures=2&retry-after=0")), id: "flaky",
                                              options: RequestOptions(retryPolicy: policy))
        #expect(result.attempts.map(\.status) == [503, 503, 200])
        let reasons = recorder.events(of: "flaky").compactMap { if case .retryScheduled(_, let reason) = $0.payload { reason } else { nil } }
        #expect(reasons.count == 2)
        #expect(reasons.allSatisfy { $0.contains("status 503") && $0.contains("Retry-After") }, "\(reasons)")
    }

    @Test(arguments: TransportKind.allCases)
    func transportFailuresHaveURLSessionsCodes(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        let deadPort = server.port
        server.stop()
        let queue = queue(kind)
        let never = RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy.never)
        do {
            _ = try await queue.response(for: URLRequest(url: URL(string: "http://127.0.0.1:\(deadPort)/echo")!), options: never)
            Issue.record("a closed port answered")
        } catch let error as RequestError {
            #expect(error.reason == .transport(TransportError(code: URLError.Code.cannotConnectToHost.rawValue, message: "")) ||
                    (error.reason.stage == .transport && "\(error)".contains("-1004")), "\(error)")
        }
        let live = try FaultServer.start()
        defer { live.stop() }
        do {
            _ = try await queue.response(for: URLRequest(url: live.url("/reset")), options: never)
            Issue.record("a reset answered")
        } catch let error as RequestError {
            guard case .transport(let transport) = error.reason else { Issue.record("\(error)"); return }
            #expect(transport.code == URLError.Code.networkConnectionLost.rawValue, "\(transport)")
        }
        // A body cut short by the server: URLSession says -1005; NIO said -1011 before.
        do {
            _ = try await queue.response(for: URLRequest(url: live.url("/close-mid-body?bytes=100000")), options: never)
            Issue.record("a cut body answered")
        } catch let error as RequestError {
            guard case .transport(let transport) = error.reason else { Issue.record("\(error)"); return }
            #expect(transport.code == URLError.Code.networkConnectionLost.rawValue, "\(transport)")
        }
    }

    /// A connection the server dropped: a long backoff, cut short when another request to the
    /// same host succeeds (early retry judges the transport's error code, so it must match).
    @Test(arguments: TransportKind.allCases)
    func aDroppedConnectionIsRetriedEarlyWhenTheHostAnswersAgain(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make())
        let recorder = EventRecorder(queue.events)
        let longWait = ExponentialBackoffRetryPolicy(maxAttempts: 3, baseDelay: 30, jitter: .none, retryBudget: nil)
        let waiting = queue.add(URLRequest(url: server.url("/flaky/\(kind)-drop?failures=1&status=drop")), id: "waiting",
                                options: RequestOptions(retryPolicy: longWait))
        try await waitUntil { if case .waitingToRetry = waiting.phase { true } else { false } }
        let started = Date()
        queue.add(URLRequest(url: server.url("/echo")), id: "other")
        let result = await waiting.finished
        #expect(result.outcome == .success)
        #expect(Date().timeIntervalSince(started) < 5, "not the 30 s backoff")
        let triggers = recorder.events(of: "waiting").compactMap { if case .earlyRetry(let trigger, _) = $0.payload { trigger } else { nil } }
        #expect(triggers == ["host-success:other"])
    }

    @Test(arguments: TransportKind.allCases)
    func cancellingEndsEveryStageAtOnceAndCompletesOnce(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = queue(kind, 1)
        let recorder = EventRecorder(queue.events)
        let counter = CompletionCounter()
        let inFlight = queue.add(URLRequest(url: server.url("/hang")), id: "in-flight", completion: counter.handler)
        // Operations start on the queue's threads in no set order: added together, the echo
        // could take the one slot first and simply run (it did once in a full run).
        try await waitUntil { inFlight.phase == .inFlight }
        let waiting = queue.add(URLRequest(url: server.url("/echo")), id: "waiting", completion: counter.handler)
        try await waitUntil { waiting.phase == .waitingForSlot }
        let started = Date()
        inFlight.cancel()
        waiting.cancel()
        try await waitUntil { counter.count == 2 }
        #expect(Date().timeIntervalSince(started) < 1)
        let backoff = queue.add(URLRequest(url: server.url("/status/503")), id: "backoff",
                                options: RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy(maxAttempts: 2, baseDelay: 30, jitter: .none)),
                                completion: counter.handler)
        try await waitUntil { if case .waitingToRetry = backoff.phase { true } else { false } }
        backoff.cancel()
        try await waitUntil { counter.count == 3 }
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(counter.count == 3, "each completion ran exactly once")
        for id in ["in-flight", "waiting", "backoff"] {
            #expect(names(recorder, id).filter { $0 == "finished" }.count == 1, "\(id)")
        }
    }

    @Test(arguments: TransportKind.allCases)
    func anAttemptTimeoutAndADeadlineHoldOnEitherTransport(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = queue(kind)
        let started = Date()
        do {
            _ = try await queue.response(for: URLRequest(url: server.url("/hang")),
                                         options: RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy.never, attemptTimeout: 0.2))
            Issue.record("a hang answered")
        } catch let error as RequestError {
            #expect("\(error)".contains("timed out"), "\(error)")
        }
        do {
            _ = try await queue.response(for: URLRequest(url: server.url("/hang")), options: RequestOptions(deadline: 0.3))
            Issue.record("a hang answered")
        } catch let error as RequestError {
            #expect(error.stage == .deadline, "\(error)")
        }
        #expect(Date().timeIntervalSince(started) < 3)
    }

    /// One slot, 300 requests, a third of them cancelled as they go: each freed slot starts
    /// the next request from inside the transport's callback (on NIO, on its event loop), so
    /// a transport that called back before `resume` returned would take the operation's lock
    /// twice — seen once in CI as "Recursive call to lock Mutex".
    @Test(arguments: TransportKind.allCases)
    func aSlotFreedInACallbackStartsTheNextRequestSafely(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = queue(kind, 1)
        let counter = CompletionCounter()
        let operations = (0..<300).map { index in
            queue.add(URLRequest(url: server.url(index % 3 == 0 ? "/delay/5" : "/echo")), id: "c\(index)", completion: counter.handler)
        }
        for (index, operation) in operations.enumerated() where index % 3 == 0 {
            try await Task.sleep(nanoseconds: 1_000_000)
            operation.cancel()
        }
        // 200 requests one after another take under a second alone, and once took past 5 s with
        // the other suites running beside them: the bound is for a lost completion, not speed.
        try await waitUntil(seconds: 30) { counter.count == 300 }
        #expect(operations.allSatisfy { $0.result != nil })
        #expect(operations.enumerated().filter { $0.offset % 3 != 0 }.allSatisfy { $0.element.result?.outcome == .success })
    }

    @Test(arguments: TransportKind.allCases)
    func fiveHundredAtOnceEachGetExactlyTheirOwnBytes(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = queue(kind, 32)
        let operations = (0..<500).map { index in
            queue.add(URLRequest(url: server.url("/bytes/\(256 + index)?seed=\(index)")), id: "b\(index)")
        }
        for (index, operation) in operations.enumerated() {
            let result = await operation.finished
            #expect(result.outcome == .success)
            #expect(Array(result.data) == FaultServer.expectedBytes(count: 256 + index, seed: UInt64(index)), "b\(index)")
        }
    }

    /// Polls every 5 ms for up to `seconds`.
    private func waitUntil(seconds: TimeInterval = 5, _ condition: () -> Bool) async throws {
        let end = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < end else {
                Issue.record("timed out waiting")
                return
            }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
    }
}
