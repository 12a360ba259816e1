import FaultServer
import Foundation
import RequestTransportNIO
@testable import RequestOperations
import Synchronization
import XCTest

/// Collects every event of a hub, for assertions.
final class EventRecorder: Sendable {
    private let events = Mutex<[RequestEvent]>([])
    private let subscription: Mutex<EventSubscription?> = Mutex(nil)
    let hub: EventHub

    init(_ hub: EventHub) {
        self.hub = hub
        let subscription = hub.subscribe(label: "test.recorder") { [weak self] batch in
            self?.events.withLock { $0 += batch }
        }
        self.subscription.withLock { $0 = subscription }
    }

    /// Every event delivered so far (waits for delivery of what was published).
    var all: [RequestEvent] {
        hub.waitUntilDelivered()
        return events.withLock { $0 }
    }

    func events(of operation: String) -> [RequestEvent] {
        all.filter { $0.operationID == operation }
    }

    /// The errors the operation's tasks ended with (`taskCompleted` with an error), in order.
    func errors(of operation: String) -> [TransportError] {
        events(of: operation).compactMap { if case .taskCompleted(let error?) = $0.payload { error } else { nil } }
    }

    func names(of operation: String) -> [String] {
        events(of: operation).map(\.payload.name)
    }
}

/// Counts completions, to check "exactly once".
final class CompletionCounter: Sendable {
    private let results = Mutex<[RequestResult]>([])

    var handler: @Sendable (RequestResult) -> Void {
        { result in self.results.withLock { $0.append(result) } }
    }

    var count: Int { results.withLock { $0.count } }
    var last: RequestResult? { results.withLock { $0.last } }
}

extension XCTestCase {
    func startServer(port: Int = 0, counters: FaultCounters = FaultCounters()) throws -> FaultServer {
        let server = try FaultServer.start(port: port, counters: counters)
        addTeardownBlock { server.stop() }
        return server
    }

    /// Polls `condition` every 5 ms until it holds or `timeout` passes.
    @discardableResult
    func waitFor(_ timeout: TimeInterval = 5, _ what: String = "condition", file: StaticString = #filePath, line: UInt = #line,
                 _ condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if condition() { return true }
            usleep(5_000)
        }
        let holds = condition()
        if !holds { XCTFail("timed out waiting for \(what)", file: file, line: line) }
        return holds
    }
}

/// A fast policy for tests that use real time.
func quickPolicy(maxAttempts: Int = 3, baseDelay: TimeInterval = 0.05, jitter: Jitter = .none) -> ExponentialBackoffRetryPolicy {
    ExponentialBackoffRetryPolicy(maxAttempts: maxAttempts, baseDelay: baseDelay, multiplier: 2, maxDelay: 2, jitter: jitter)
}

/// The transport the engine suites run on: URLSession, or AsyncHTTPClient when
/// `REQTOP_TEST_TRANSPORT=nio` (`.ci/run` runs these suites a second time so). XCTest on
/// Linux does not find inherited test methods, so a subclass per transport cannot
/// parameterise them; the newer suites use Swift Testing's arguments instead.
enum TestTransport {
    static let name = ProcessInfo.processInfo.environment["REQTOP_TEST_TRANSPORT"] ?? "urlsession"
    static let chosen: RequestTransport? = {
        switch name {
        case "urlsession": return nil
        case "nio": return NIOTransport.shared
        default: fatalError("REQTOP_TEST_TRANSPORT is urlsession or nio, not \(name)")
        }
    }()
    /// `sent` (the request written whole) comes from transports that observe it; URLSession
    /// on Linux does not.
    /// What a transport that can tell says between the task and the response (NIO: the
    /// connection the request was given, and when it was written).
    static let phasesWhereKnown = name == "nio" ? ["connection", "sent"] : []
}

/// A `RequestQueue` on the transport under test (see ``TestTransport``); the same
/// arguments as `RequestQueue.init`.
func makeQueue(maxConcurrentRequests: Int = 6, maxConcurrentRequestsPerHost: Int? = nil, session: SharedSession = .shared,
               clock: RequestClock = SystemClock(), random: RandomSource = SystemRandomSource(),
               earlyRetry: HostRecoveryCenter.Options? = .init(), probe: HostProbe = TCPConnectProbe(),
               retryBudget: RatioRetryBudget.Options? = .init(), circuitBreaker: HostCircuitBreaker.Options? = .init(),
               rateLimits: Bool = true) -> RequestQueue {
    RequestQueue(maxConcurrentRequests: maxConcurrentRequests, maxConcurrentRequestsPerHost: maxConcurrentRequestsPerHost,
                 session: session, transport: TestTransport.chosen, clock: clock, random: random,
                 earlyRetry: earlyRetry, probe: probe, retryBudget: retryBudget, circuitBreaker: circuitBreaker,
                 rateLimits: rateLimits)
}
