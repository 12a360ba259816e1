import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import XCTest

/// Hedged reads end to end on the fault server (both transports: see
/// scripts/engine-tests-on-nio.sh): a copy of a request that has had no response is sent
/// alongside it, the first response wins, the other copy is cancelled and says why.
/// `/flaky/K?failures=N&status=slow&ms=A&ok-ms=B` answers its first N hits after A ms
/// (`slow hit n`) and the later ones after B ms, so which copy answers first is set by the URL.
final class HedgeTests: XCTestCase {
    private let hedged = RequestOptions(hedge: .hedge(after: 0.2, max: 1))

    private func key() -> String { "h\(UInt32.random(in: 0 ... .max))" }

    func testAHedgeAnswersFirstWhenTheFirstCopyIsSlowAndTheFirstIsCancelled() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let path = "/flaky/\(key())"
        let started = Date()
        let op = queue.add(URLRequest(url: server.url("\(path)?failures=1&status=slow&ms=4000")), id: "op", options: hedged)
        queue.waitUntilAllOperationsAreFinished()
        let result = try XCTUnwrap(op.result)
        XCTAssertEqual(result.outcome, .success)
        XCTAssertEqual(String(decoding: result.data, as: UTF8.self), "ok after 1 failures (hit 2)\n", "the hedge's answer")
        XCTAssertLessThan(Date().timeIntervalSince(started), 3, "it did not wait for the slow copy")
        XCTAssertEqual(server.counters.hits(path), 2)
        XCTAssertEqual(result.attempts.map(\.number), [1, 2])
        XCTAssertEqual(result.attempts[0].failure, .transport(.cancelled))
        XCTAssertEqual(result.attempts[0].decision, "cancelled by hedge: attempt 2 answered first")
        XCTAssertEqual(result.attempts[1].status, 200)

        let events = recorder.events(of: "op")
        let hedge = try XCTUnwrap(events.first { $0.payload.name == "hedged" })
        XCTAssertEqual(hedge.attempt, 2)
        guard case .hedged(let racing, let after) = hedge.payload else { return XCTFail("\(hedge.payload)") }
        XCTAssertEqual(racing, 1)
        XCTAssertGreaterThanOrEqual(after, 0.19)
        XCTAssertEqual(events.filter { $0.attempt == 1 && $0.payload.name == "taskCompleted" }.map(\.payload),
                       [.taskCompleted(error: .hedgeLost(to: 2))])
        XCTAssertEqual(events.filter { $0.attempt == 2 }.map(\.payload.name),
                       ["hedged", "taskCreated"] + TestTransport.phasesWhereKnown + ["response", "data", "responseBody", "taskCompleted", "finished"])
        guard case .finished(_, _, let attempts, _, _)? = events.last?.payload else { return XCTFail("no finished") }
        XCTAssertEqual(attempts, 2)
    }

    /// With an injected clock the copy goes out exactly when the delay has passed on it, and
    /// not a moment before, however long the first copy takes in real time.
    func testWithAnInjectedClockTheCopyIsSentExactlyWhenTheDelayPasses() throws {
        let server = try startServer()
        let clock = ManualClock(now: 0)
        let queue = makeQueue(clock: clock, earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let path = "/flaky/\(key())"
        let op = queue.add(URLRequest(url: server.url("\(path)?failures=1&status=slow&ms=3000")), id: "op",
                           options: RequestOptions(hedge: .hedge(after: 0.5)))
        XCTAssertTrue(waitFor(5, "the first copy at the server") { server.counters.hits(path) == 1 })
        Thread.sleep(forTimeInterval: 0.3)
        clock.advance(by: 0.49)
        Thread.sleep(forTimeInterval: 0.1)
        XCTAssertEqual(server.counters.hits(path), 1, "0.49 s on the clock: no copy yet")
        clock.advance(by: 0.01)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(server.counters.hits(path), 2)
        XCTAssertEqual(String(decoding: op.result?.data ?? Data(), as: UTF8.self), "ok after 1 failures (hit 2)\n")
        let hedge = try XCTUnwrap(recorder.events(of: "op").first { $0.payload.name == "hedged" })
        XCTAssertEqual(hedge.payload, .hedged(racing: 1, after: 0.5), "the wait, to the clock's tick")
        XCTAssertEqual(hedge.time, 0.5)
    }

    func testTheFirstCopyWinsWhenItAnswersFirstAndTheHedgeIsCancelled() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let path = "/flaky/\(key())"
        // Both copies take 700 ms; the first started 200 ms earlier.
        let op = queue.add(URLRequest(url: server.url("\(path)?failures=2&status=slow&ms=700")), id: "op", options: hedged)
        queue.waitUntilAllOperationsAreFinished()
        let result = try XCTUnwrap(op.result)
        XCTAssertEqual(result.outcome, .success)
        XCTAssertEqual(String(decoding: result.data, as: UTF8.self), "slow hit 1\n")
        XCTAssertEqual(result.attempts.map(\.status), [200, nil])
        XCTAssertEqual(result.attempts[1].decision, "cancelled by hedge: attempt 1 answered first")
        let events = recorder.events(of: "op")
        let hedge = events.filter { $0.attempt == 2 }
        XCTAssertEqual(hedge.map(\.payload.name), ["hedged", "taskCreated"] + TestTransport.phasesWhereKnown + ["taskCompleted"])
        XCTAssertEqual(hedge.last?.payload, .taskCompleted(error: .hedgeLost(to: 1)))
        XCTAssertEqual(events.last.map(\.attempt), 1, "finished names the attempt that answered")
        XCTAssertEqual(events.last?.payload.name, "finished")
    }

    func testNoCopyIsSentWhenTheResponseComesInTimeOrTheMethodIsNotIdempotent() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let quick = queue.add(URLRequest(url: server.url("/delay/20")), id: "quick", options: hedged)
        var post = URLRequest(url: server.url("/delay/600"))
        post.httpMethod = "POST"
        post.httpBody = Data("{}".utf8)
        let unsafe = queue.add(post, id: "post", options: hedged)
        var keyed = post
        keyed.setValue("k-1", forHTTPHeaderField: "Idempotency-Key")
        let withKey = queue.add(keyed, id: "keyed", options: hedged)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(quick.result?.attempts.count, 1)
        XCTAssertEqual(unsafe.result?.attempts.count, 1, "a POST may act twice: never hedged")
        XCTAssertFalse(recorder.names(of: "quick").contains("hedged"))
        XCTAssertFalse(recorder.names(of: "post").contains("hedged"))
        XCTAssertEqual(withKey.result?.attempts.count, 2, "an Idempotency-Key makes it safe to send twice")
        XCTAssertTrue(recorder.names(of: "keyed").contains("hedged"))
    }

    func testTheLeadFailingBeforeAnyResponseLeavesTheHedgeToAnswer() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let path = "/flaky/\(key())"
        // Hit 1 is cut off at 400 ms; hit 2 (the hedge, at 200 ms) answers at 900 ms.
        let op = queue.add(URLRequest(url: server.url("\(path)?failures=1&status=drop&ms=400&ok-ms=700")), id: "op", options: hedged)
        queue.waitUntilAllOperationsAreFinished()
        let result = try XCTUnwrap(op.result)
        XCTAssertEqual(result.outcome, .success)
        XCTAssertEqual(result.attempts.count, 2, "no retry: the hedge was still on its way")
        // Cut off without an answer: connection lost on NIO, "empty reply" (bad server response) on libcurl.
        XCTAssertEqual(result.attempts[0].failure?.isTransportFailure, true, "\(String(describing: result.attempts[0].failure))")
        XCTAssertEqual(result.attempts[0].decision, "failed; its hedge goes on")
        XCTAssertEqual(result.attempts[1].status, 200)
        XCTAssertFalse(recorder.names(of: "op").contains("retryScheduled"))
        XCTAssertEqual(server.counters.hits(path), 2)
    }

    func testCancellingStopsEveryCopyAndTheAttemptTimeoutEndsThemAll() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let op = queue.add(URLRequest(url: server.url("/hang")), id: "cancelled",
                           options: RequestOptions(hedge: .hedge(after: 0.1, max: 2)))
        XCTAssertTrue(waitFor(5, "two hedges") { op.attempt == 3 })
        XCTAssertTrue(waitFor(5, "three requests at the server") { server.counters.hits("/hang") == 3 })
        op.cancel()
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(op.result?.outcome, .cancelled)
        XCTAssertEqual(op.result?.attempts.compactMap(\.endedAt).count, 3, "every copy ended with the operation")
        if TestTransport.name == "urlsession" {
            XCTAssertTrue(waitFor(5, "every task gone from the session") { SharedSession.shared.routedTaskCount == 0 })
        }
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(server.counters.hits("/hang"), 3, "no copy after the end")

        let timed = queue.add(URLRequest(url: server.url("/hang")), id: "timed",
                              options: RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy(maxAttempts: 2), attemptTimeout: 0.6,
                                                   hedge: .hedge(after: 0.2, max: 1)))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(timed.result?.outcome, .failure)
        XCTAssertEqual(timed.result?.attempts.map(\.failure), [.transport(.timedOut), .transport(.timedOut)])
        XCTAssertEqual(recorder.names(of: "timed").filter { $0 == "taskCompleted" }.count, 2)
    }

    func testAHedgeIsARetryToTheBudgetAndTheAttemptLimit() throws {
        let server = try startServer()
        // No retries at all: the budget refuses every hedge.
        let queue = makeQueue(earlyRetry: nil, retryBudget: .init(percent: 0, minRetriesPerSecond: 0))
        let slow = "/flaky/\(key())?failures=1&status=slow&ms=500"
        let refused = queue.add(URLRequest(url: server.url(slow)), id: "budget", options: hedged)
        var limited = hedged
        limited.retryPolicy = .never
        let single = queue.add(URLRequest(url: server.url("/delay/500")), id: "limit", options: limited)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(refused.result?.attempts.count, 1, "the retry budget refused the hedge")
        XCTAssertEqual(single.result?.attempts.count, 1, "one attempt allowed: no room for a copy")
        XCTAssertEqual(refused.result?.outcome, .success)
    }
}
