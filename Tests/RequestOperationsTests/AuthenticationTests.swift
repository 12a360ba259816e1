import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Synchronization
import XCTest

/// The bearer-token helper against the fault server's token and protected routes.
final class AuthenticationTests: XCTestCase {
    /// A session that really runs 50 requests to one host at once (URLSession allows 6 by default).
    static let wideSession: SharedSession = {
        let configuration = URLSessionConfiguration.default
        configuration.httpMaximumConnectionsPerHost = 64
        return SharedSession(configuration: configuration)
    }()

    private func setUp(server: FaultServer, tokenQuery: String = "", maxConcurrent: Int = 64,
                       options: RequestReactor.Options = RequestReactor.Options()) -> (RequestQueue, BearerTokenAuthenticator, RequestOptions) {
        let queue = makeQueue(maxConcurrentRequests: maxConcurrent, session: Self.wideSession, earlyRetry: nil)
        let endpoint = TokenEndpoint(url: server.url("/auth/token" + tokenQuery), credentials: ["username": "demo", "password": "secret"],
                                     queue: queue)
        let auth = BearerTokenAuthenticator(refresher: endpoint, options: options)
        var requestOptions = RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy.never)
        auth.install(on: &requestOptions)
        return (queue, auth, requestOptions)
    }

    private func statuses(_ recorder: EventRecorder, _ id: String) -> [Int] {
        recorder.events(of: id).compactMap { event in
            if case .response(let status, _, _, _) = event.payload { return status }
            return nil
        }
    }

    func testFiftyConcurrent401sRunOneRefreshAndAllSucceedWithTheNewToken() throws {
        let counters = FaultCounters()
        let server = try startServer(counters: counters)
        let (queue, auth, options) = setUp(server: server)
        let recorder = EventRecorder(queue.events)

        // Log in once (the interceptor has no token yet), then let that token expire.
        let first = queue.add(URLRequest(url: server.url("/auth/resource/first")), id: "first", options: options)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(first.result?.outcome, .success)
        XCTAssertEqual(auth.currentToken, "tok-1")
        counters.expireToken()

        // Each request is answered 800 ms after it arrives: all 50 are sent with the
        // expired token before the first 401 comes back.
        let operations = (1...50).map { index in
            queue.add(URLRequest(url: server.url("/auth/resource/r\(index)?delay=800")), id: "r\(index)", options: options)
        }
        queue.waitUntilAllOperationsAreFinished()

        XCTAssertEqual(counters.tokensIssued, 2, "exactly one refresh after the login")
        XCTAssertEqual(auth.reactor.runCount, 2)
        XCTAssertEqual(auth.currentToken, "tok-2")
        for operation in operations {
            XCTAssertEqual(operation.result?.outcome, .success, operation.id)
            XCTAssertEqual(statuses(recorder, operation.id), [401, 200], operation.id)
            let body = try JSONSerialization.jsonObject(with: operation.result?.data ?? Data()) as? [String: Any]
            XCTAssertEqual(body?["token"] as? String, "tok-2")
        }
        let started = recorder.all.filter { if case .reactorStarted = $0.payload { return true } else { return false } }
        XCTAssertEqual(started.count, 1, "one operation starts the refresh; the others join it")
        XCTAssertEqual(counters.hits("/auth/resource/r7"), 2)
    }

    func testRequestsMadeWhileARefreshRunsWaitAndGoOutOnceWithTheNewToken() throws {
        let counters = FaultCounters()
        let server = try startServer(counters: counters)
        // The token route takes 400 ms, so the refresh is still running when the others are added.
        let (queue, auth, options) = setUp(server: server, tokenQuery: "?delay=400")
        let recorder = EventRecorder(queue.events)
        let trigger = queue.add(URLRequest(url: server.url("/auth/resource/trigger")), id: "trigger", options: options)
        waitFor(5, "the login to start") { auth.reactor.isRunning }
        let late = (1...5).map { queue.add(URLRequest(url: server.url("/auth/resource/late\($0)")), id: "late\($0)", options: options) }
        queue.waitUntilAllOperationsAreFinished()

        XCTAssertEqual(trigger.result?.outcome, .success)
        XCTAssertEqual(counters.tokensIssued, 1)
        for operation in late {
            XCTAssertEqual(operation.result?.outcome, .success)
            XCTAssertEqual(counters.hits("/auth/resource/\(operation.id)"), 1, "sent once, with the new token")
            XCTAssertEqual(statuses(recorder, operation.id), [200])
            XCTAssertEqual(Array(recorder.names(of: operation.id).prefix(4)), ["queued", "reactorWaiting", "reactorFinished", "intercepted"])
        }
    }

    func testA401ForAnOlderTokenIsSentAgainAtOnceWithoutAnotherRefresh() throws {
        let counters = FaultCounters()
        let server = try startServer(counters: counters)
        let (queue, auth, options) = setUp(server: server)
        queue.add(URLRequest(url: server.url("/auth/resource/login")), options: options)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(auth.currentToken, "tok-1")

        // "slow" goes out with tok-1 and is answered a second later. Meanwhile tok-1
        // expires, "other" gets a 401 and the refresh makes tok-2. Then slow's 401 (for
        // tok-1) comes back: it is sent again with tok-2 at once, without a refresh.
        let recorder = EventRecorder(queue.events)
        let slow = queue.add(URLRequest(url: server.url("/auth/resource/slow?delay=1000")), id: "slow", options: options)
        waitFor(5, "the request to be sent") { counters.hits("/auth/resource/slow") == 1 }
        counters.expireToken()
        let other = queue.add(URLRequest(url: server.url("/auth/resource/other")), id: "other", options: options)
        queue.waitUntilAllOperationsAreFinished()

        XCTAssertEqual(other.result?.outcome, .success)
        XCTAssertEqual(slow.result?.outcome, .success)
        XCTAssertEqual(counters.tokensIssued, 2, "one refresh, for other's 401 only")
        XCTAssertEqual(statuses(recorder, "slow"), [401, 200])
        let names = recorder.names(of: "slow")
        XCTAssertTrue(names.contains("requeued"))
        XCTAssertFalse(names.contains("reactorStarted"))
        XCTAssertFalse(names.contains("reactorWaiting"))
        XCTAssertEqual(slow.request.value(forHTTPHeaderField: "Authorization"), nil, "the built request is left alone")
    }

    func testAnOlderToken401IsRequeuedByTheHandlerWithoutARun() {
        let store = TokenStore("tok-2")
        let handler = TokenRefreshHandler(store: store, refresher: ClosureTokenRefresher { _ in "never" })
        var request = URLRequest(url: URL(string: "http://127.0.0.1/x")!)
        request.setValue("Bearer tok-1", forHTTPHeaderField: "Authorization")
        let old = ReactorInput(operationID: "a", request: request, status: 401, headers: [:], failure: .status(401, headers: [:]))
        XCTAssertEqual(handler.decide(old), .requeue(reason: "401 for an older token; sending again with the current one"))
        request.setValue("Bearer tok-2", forHTTPHeaderField: "Authorization")
        let current = ReactorInput(operationID: "a", request: request, status: 401, headers: [:], failure: .status(401, headers: [:]))
        XCTAssertEqual(handler.decide(current), .react(trigger: "status 401"))
        let ok = ReactorInput(operationID: "a", request: request, status: 200, headers: [:], failure: nil)
        XCTAssertEqual(handler.decide(ok), .ignore)
    }

    func testAFailedRefreshFailsEveryWaitingRequestAndRetriesNothingWithTheOldToken() throws {
        let counters = FaultCounters()
        let server = try startServer(counters: counters)
        // The token route answers 500: the refresh fails (after its own 2 attempts).
        let (queue, _, options) = setUp(server: server, tokenQuery: "?status=500&delay=200")
        let operations = (1...10).map { queue.add(URLRequest(url: server.url("/auth/resource/f\($0)")), id: "f\($0)", options: options) }
        queue.waitUntilAllOperationsAreFinished()
        for operation in operations {
            XCTAssertEqual(operation.result?.outcome, .failure)
            XCTAssertEqual(operation.result?.error?.stage, .reactor)
            XCTAssertTrue("\(operation.result?.error ?? .status(0))".contains("token request failed: status 500"), "\(String(describing: operation.result?.error))")
            XCTAssertEqual(counters.hits("/auth/resource/\(operation.id)"), 0, "nothing is sent without a token")
        }
        XCTAssertEqual(counters.hits("/auth/token"), 1, "one refresh for all ten (a POST answered 500 is not retried)")
    }

    func testTheRefreshRequestNeverPassesThroughTheAuthInterceptorOrReactor() throws {
        let counters = FaultCounters()
        let server = try startServer(counters: counters)
        let (queue, _, options) = setUp(server: server)
        let recorder = EventRecorder(queue.events)
        queue.add(URLRequest(url: server.url("/auth/resource/x")), id: "x", options: options)
        queue.waitUntilAllOperationsAreFinished()
        let refreshIDs = Set(recorder.all.map(\.operationID)).filter { $0.hasPrefix("token-refresh") }
        XCTAssertEqual(refreshIDs.count, 1)
        let names = recorder.names(of: refreshIDs.first!)
        XCTAssertFalse(names.contains("intercepted"))
        XCTAssertFalse(names.contains("reactorWaiting"))
        XCTAssertEqual(names.first, "queued")
        XCTAssertEqual(names.last, "finished")
        XCTAssertEqual(recorder.names(of: "x").filter { $0 == "intercepted" }.count, 1)
        XCTAssertEqual(Array(recorder.names(of: "x").prefix(4)), ["queued", "reactorWaiting", "reactorFinished", "intercepted"],
                       "the first request shows that it waits for the login")
    }

    func testAReactorThatKeepsFiringStopsWithAnExcessiveRefreshError() throws {
        let counters = FaultCounters()
        let server = try startServer(counters: counters)
        // A refresh that "succeeds" with a token the server never accepts.
        let queue = makeQueue(session: Self.wideSession, earlyRetry: nil)
        let runs = Mutex(0)
        let auth = BearerTokenAuthenticator(token: "bogus", refresher: ClosureTokenRefresher { _ in
            runs.withLock { $0 += 1 }
            return "bogus-\(runs.withLock { $0 })"
        }, options: RequestReactor.Options(maxRuns: 3, window: 60))
        var options = RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy.never)
        auth.install(on: &options)
        let operation = queue.add(URLRequest(url: server.url("/auth/resource/loop")), options: options)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.outcome, .failure)
        XCTAssertEqual(operation.result?.error?.stage, .reactor)
        XCTAssertTrue("\(operation.result!.error!)".contains("excessive refresh"), "\(operation.result!.error!)")
        XCTAssertEqual(runs.withLock { $0 }, 3)
        XCTAssertEqual(counters.hits("/auth/resource/loop"), 4)
    }

    func testAReactorThatTakesTooLongFailsItsWaitingOperations() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let reactor = RequestReactor(name: "slow-fix", options: RequestReactor.Options(timeLimit: 0.2), decide: { input in
            input.status == 503 ? .react(trigger: "status 503") : .ignore
        }, run: { _ in try await Task.sleep(nanoseconds: 5_000_000_000) })
        let started = Date()
        let operation = queue.add(URLRequest(url: server.url("/status/503")),
                                  options: RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy.never, reactors: [reactor]))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.error, .reactor(name: "slow-fix", message: "timed out after 0.2s"))
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
    }
}
