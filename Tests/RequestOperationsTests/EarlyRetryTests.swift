import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Synchronization
import XCTest

final class EarlyRetryTests: XCTestCase {
    private let longWait = ExponentialBackoffRetryPolicy(maxAttempts: 3, baseDelay: 30, jitter: .none, retryBudget: nil)

    private func earlyRetries(_ recorder: EventRecorder, _ operation: String) -> [String] {
        recorder.events(of: operation).compactMap { event in
            if case .earlyRetry(let trigger, _) = event.payload { return trigger }
            return nil
        }
    }

    func testASuccessOnTheSameHostCutsABackoffShort() throws {
        let server = try startServer()
        let queue = makeQueue()
        let recorder = EventRecorder(queue.events)
        let waiting = queue.add(URLRequest(url: server.url("/flaky/e?failures=1&status=drop")), id: "waiting", options: RequestOptions(retryPolicy: longWait))
        waitFor(5, "the backoff") { if case .waitingToRetry = waiting.phase { true } else { false } }
        XCTAssertEqual(queue.environment.recovery?.observerCount, 1)
        let start = Date()
        queue.add(URLRequest(url: server.url("/echo")), id: "other")
        waitFor(5, "the early retry") { waiting.result != nil }
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
        XCTAssertEqual(waiting.result?.outcome, .success)
        XCTAssertEqual(earlyRetries(recorder, "waiting"), ["host-success:other"])
        XCTAssertEqual(queue.environment.recovery?.observerCount, 0)
    }

    func testAServersRetryAfterIsRespectedEvenWhenTheHostSucceeds() throws {
        let server = try startServer()
        let queue = makeQueue()
        let recorder = EventRecorder(queue.events)
        let waiting = queue.add(URLRequest(url: server.url("/flaky/ra?failures=1&status=503&retry-after=1")), id: "ra")
        waitFor(5, "the backoff") { if case .waitingToRetry = waiting.phase { true } else { false } }
        queue.add(URLRequest(url: server.url("/echo")))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(earlyRetries(recorder, "ra"), [])
        XCTAssertEqual(waiting.result?.outcome, .success)
        XCTAssertGreaterThanOrEqual(waiting.result?.duration ?? 0, 0.99)
    }

    /// Before: any success on the host retried requests waiting out a 429 or a 503 at once,
    /// undoing the backoff the server asked for.
    func testAnAnswerThatSaidSlowDownIsNeverCutShortByAnotherSuccess() throws {
        let server = try startServer()
        let queue = makeQueue()
        let recorder = EventRecorder(queue.events)
        let waiting = ["429", "503", "500"].map { status in
            queue.add(URLRequest(url: server.url("/flaky/slow\(status)?failures=1&status=\(status)")), id: "s\(status)",
                      options: RequestOptions(retryPolicy: longWait))
        }
        waitFor(5, "the backoffs") { waiting.allSatisfy { if case .waitingToRetry = $0.phase { true } else { false } } }
        XCTAssertEqual(queue.environment.recovery?.observerCount, 0, "nothing waits for the host's success")
        let other = queue.add(URLRequest(url: server.url("/echo")), id: "other")
        waitFor(5, "the other request") { other.result != nil }
        usleep(600_000)  // early retries come 50–250 ms after a success
        for operation in waiting {
            XCTAssert({ if case .waitingToRetry = operation.phase { true } else { false } }(), "\(operation.id) still waits its backoff")
            XCTAssertEqual(earlyRetries(recorder, operation.id), [])
        }
        queue.cancelAll()
        queue.waitUntilAllOperationsAreFinished()
    }

    func testAProbeNoticesTheHostIsBack() throws {
        let counters = FaultCounters()
        let first = try FaultServer.start(counters: counters)
        let port = first.port
        first.stop()
        let queue = makeQueue()
        let recorder = EventRecorder(queue.events)
        let waiting = queue.add(URLRequest(url: URL(string: "http://127.0.0.1:\(port)/echo")!), id: "down",
                                options: RequestOptions(retryPolicy: longWait))
        waitFor(5, "the backoff") { if case .waitingToRetry = waiting.phase { true } else { false } }
        XCTAssertEqual(waiting.attempts.first?.failure, .transport(.cannotConnectToHost))
        XCTAssertEqual(queue.environment.recovery?.activeProbeCount, 1)
        usleep(300_000)
        let again = try startServer(port: port, counters: counters)
        let start = Date()
        waitFor(10, "the probe to notice") { waiting.result != nil }
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
        XCTAssertEqual(waiting.result?.outcome, .success)
        XCTAssertEqual(earlyRetries(recorder, "down"), ["probe"])
        XCTAssertEqual(again.counters.hits("/echo"), 1)
        XCTAssertEqual(queue.environment.recovery?.observerCount, 0)
        XCTAssertEqual(queue.environment.recovery?.activeProbeCount, 0)
    }

    func testRetryNowSkipsTheWait() throws {
        let server = try startServer()
        let queue = makeQueue()
        let recorder = EventRecorder(queue.events)
        // The failing answer takes 300 ms: on NIO a loaded machine had the first attempt fail
        // and wait before the next line ran, and then there was something to skip.
        let waiting = queue.add(URLRequest(url: server.url("/flaky/now?failures=1&ms=300")), id: "now",
                                options: RequestOptions(retryPolicy: longWait, earlyRetryOnHostSuccess: false))
        XCTAssertFalse(waiting.retryNow(), "nothing to skip yet")
        waitFor(5, "the backoff") { if case .waitingToRetry = waiting.phase { true } else { false } }
        XCTAssertTrue(waiting.retryNow())
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(waiting.result?.outcome, .success)
        XCTAssertEqual(earlyRetries(recorder, "now"), ["manual"])
        XCTAssertEqual(waiting.attempts.count, 2)
    }

    func testEveryObserverAndProbeIsTornDownWhenOperationsEnd() throws {
        let server = try startServer()
        let dead = try FaultServer.start()
        let deadPort = dead.port
        dead.stop()
        // No breaker: five dropped connections would open the fault server's, and the
        // attempts still waiting for a slot would then wait for it, not for their retry.
        let queue = makeQueue(circuitBreaker: nil)
        let recovery = try XCTUnwrap(queue.environment.recovery)
        var operations = (0..<10).map { index in
            queue.add(URLRequest(url: server.url("/flaky/obs\(index)?failures=5&status=drop")), options: RequestOptions(retryPolicy: longWait))
        }
        operations += (0..<5).map { _ in
            queue.add(URLRequest(url: URL(string: "http://127.0.0.1:\(deadPort)/x")!), options: RequestOptions(retryPolicy: longWait))
        }
        waitFor(5, "every operation in backoff") {
            operations.allSatisfy { if case .waitingToRetry = $0.phase { true } else { false } }
        }
        // The phase is set before the observer is (scheduleRetry runs after the lock): wait for it.
        waitFor(5, "an observer for each") { recovery.observerCount == 15 }
        XCTAssertEqual(recovery.observerCount, 15)
        XCTAssertEqual(recovery.activeProbeCount, 1, "one probe loop per host, shared")
        queue.cancelAll()
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(recovery.observerCount, 0)
        XCTAssertEqual(recovery.activeProbeCount, 0)
        let probes = recovery.probesSent
        usleep(600_000)
        XCTAssertEqual(recovery.probesSent, probes, "a probe ran after its waiters ended")
    }
}
