import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Synchronization
import XCTest

final class InterceptorTests: XCTestCase {
    private func header(_ name: String, ofEcho result: RequestResult?) -> String? {
        let object = try? JSONSerialization.jsonObject(with: result?.data ?? Data()) as? [String: Any]
        return (object?["headers"] as? [String: String])?[name.lowercased()]
    }

    private func adding(_ name: String, _ value: String, command: InterceptorCommand = .execute) -> ClosureInterceptor {
        ClosureInterceptor(name: name) { request, _ in
            var request = request
            request.addValue(value, forHTTPHeaderField: "X-Chain")
            return Interception(request, command)
        }
    }

    func testTheChainRunsInOrderAndEachStepIsAnEvent() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let options = RequestOptions(interceptors: [adding("a", "1"), adding("b", "2")])
        let operation = queue.add(URLRequest(url: server.url("/echo")), id: "chain", options: options)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.outcome, .success)
        XCTAssertEqual(header("X-Chain", ofEcho: operation.result), "1,2")
        XCTAssertEqual(recorder.names(of: "chain"), ["queued", "intercepted", "intercepted", "started", "taskCreated"]
                       + TestTransport.phasesWhereKnown + ["response", "data", "responseBody", "taskCompleted", "finished"])
        XCTAssertEqual(recorder.events(of: "chain")[1].payload, .intercepted(by: "a", command: "execute"))
    }

    func testForceExecuteSkipsTheRestOfTheChain() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let options = RequestOptions(interceptors: [adding("a", "1", command: .forceExecute), adding("b", "2")])
        let operation = queue.add(URLRequest(url: server.url("/echo")), options: options)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(header("X-Chain", ofEcho: operation.result), "1")
    }

    func testDiscardEndsTheOperationAsCancelledWithoutSendingIt() throws {
        let counters = FaultCounters()
        let server = try startServer(counters: counters)
        let queue = makeQueue(earlyRetry: nil)
        let options = RequestOptions(interceptors: [adding("gatekeeper", "1", command: .discard(reason: "offline mode"))])
        let operation = queue.add(URLRequest(url: server.url("/echo")), options: options)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.outcome, .cancelled)
        XCTAssertEqual(operation.result?.error, .cancelled(by: "gatekeeper"))
        XCTAssertEqual(counters.totalHits, 0)
    }

    func testAThrowingInterceptorFailsTheOperationAsAnInterceptorErrorWithoutRetrying() throws {
        let counters = FaultCounters()
        let server = try startServer(counters: counters)
        let queue = makeQueue(earlyRetry: nil)
        struct NoKey: Error, CustomStringConvertible { var description: String { "no signing key" } }
        let signer = ClosureInterceptor(name: "signer") { _, _ in throw NoKey() }
        let operation = queue.add(URLRequest(url: server.url("/echo")), options: RequestOptions(retryPolicy: quickPolicy(), interceptors: [signer]))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.error, .interceptor(name: "signer", message: "no signing key"))
        XCTAssertEqual(operation.result?.error?.stage, .interceptor)
        XCTAssertEqual(counters.totalHits, 0)
    }

    func testInterceptorsRunAgainForEveryAttempt() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let seen = Mutex<[Int]>([])
        let counter = ClosureInterceptor(name: "count") { request, context in
            seen.withLock { $0.append(context.attempt) }
            return Interception(request)
        }
        let operation = queue.add(URLRequest(url: server.url("/flaky/i?failures=2")),
                                  options: RequestOptions(retryPolicy: quickPolicy(), interceptors: [counter]))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.outcome, .success)
        XCTAssertEqual(seen.withLock { $0 }, [1, 2, 3])
    }

    // MARK: - Batches

    func testABatchReleasesItsRequestsTogetherWhenItIsFull() throws {
        let counters = FaultCounters()
        let server = try startServer(counters: counters)
        let queue = makeQueue(earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let batch = RequestBatch(name: "uploads", size: 3)
        let options = RequestOptions(interceptors: [BatchingInterceptor(batch: batch)])
        let first = (1...2).map { queue.add(URLRequest(url: server.url("/echo")), id: "u\($0)", options: options) }
        waitFor(5, "two held") { batch.heldCount == 2 }
        usleep(100_000)
        XCTAssertEqual(counters.totalHits, 0, "held requests are not sent")
        XCTAssertTrue(first.allSatisfy { $0.phase == .held(batch: "uploads") })
        queue.add(URLRequest(url: server.url("/echo")), id: "u3", options: options)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(counters.totalHits, 3)
        XCTAssertEqual(batch.releasedCount, 3)
        for id in ["u1", "u2", "u3"] {
            let payloads = recorder.events(of: id).map(\.payload)
            XCTAssertTrue(payloads.contains(.held(batch: "uploads")), id)
            XCTAssertTrue(payloads.contains(.released(batch: "uploads", size: 3)), id)
        }
    }

    func testABatchHoldsTheFirstAttemptOnlyUnlessToldOtherwise() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let once = RequestBatch(name: "once", size: 1)
        let every = RequestBatch(name: "every", size: 1)
        queue.add(URLRequest(url: server.url("/flaky/b1?failures=2")), id: "once",
                  options: RequestOptions(retryPolicy: quickPolicy(), interceptors: [BatchingInterceptor(batch: once)]))
        queue.add(URLRequest(url: server.url("/flaky/b2?failures=2")), id: "every",
                  options: RequestOptions(retryPolicy: quickPolicy(), interceptors: [BatchingInterceptor(batch: every, everyAttempt: true)]))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(recorder.names(of: "once").filter { $0 == "held" }.count, 1, "a retry is not held again")
        XCTAssertEqual(recorder.names(of: "every").filter { $0 == "held" }.count, 3)
    }

    func testABatchIsReleasedWhenItsTimeLimitPasses() throws {
        let clock = ManualClock()
        let batch = RequestBatch(name: "slow", size: 10, timeLimit: 2)
        let released = Mutex<[Int]>([])
        for _ in 0..<2 {
            Task.detached { @Sendable in
                let size = await batch.hold(clock: clock)
                released.withLock { $0.append(size) }
            }
        }
        waitFor(5, "two held") { batch.heldCount == 2 }
        clock.advance(by: 1.9)
        XCTAssertEqual(batch.heldCount, 2)
        clock.advance(by: 0.1)
        waitFor(5, "both released") { released.withLock { $0.count } == 2 }
        XCTAssertEqual(released.withLock { $0 }, [2, 2])
        XCTAssertEqual(clock.pendingTimerCount, 0)
    }

    func testABatchReleasedByHandLetsItsRequestsGo() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let batch = RequestBatch(name: "manual", size: 100)
        let operation = queue.add(URLRequest(url: server.url("/echo")), options: RequestOptions(interceptors: [BatchingInterceptor(batch: batch)]))
        waitFor(5, "held") { batch.heldCount == 1 }
        XCTAssertEqual(batch.release(), 1)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.outcome, .success)
    }

    func testCancellingAHeldRequestTakesItOutOfTheBatch() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let batch = RequestBatch(name: "b", size: 2)
        let options = RequestOptions(interceptors: [BatchingInterceptor(batch: batch)])
        let held = queue.add(URLRequest(url: server.url("/echo")), options: options)
        waitFor(5, "held") { batch.heldCount == 1 }
        held.cancel()
        waitFor(5, "withdrawn") { batch.heldCount == 0 }
        XCTAssertEqual(held.result?.outcome, .cancelled)
        let next = queue.add(URLRequest(url: server.url("/echo")), options: options)
        waitFor(5, "held alone") { batch.heldCount == 1 }
        XCTAssertNil(next.result, "a cancelled request does not count towards the batch")
        batch.release()
        queue.waitUntilAllOperationsAreFinished()
    }

    func testHeldRequestsHoldNoSlot() throws {
        let server = try startServer()
        let queue = makeQueue(maxConcurrentRequests: 1, earlyRetry: nil)
        let batch = RequestBatch(name: "b", size: 5)
        for _ in 0..<3 {
            queue.add(URLRequest(url: server.url("/echo")), options: RequestOptions(interceptors: [BatchingInterceptor(batch: batch)]))
        }
        waitFor(5, "held") { batch.heldCount == 3 }
        let free = queue.add(URLRequest(url: server.url("/echo")))
        waitFor(5, "the unbatched request to finish") { free.result != nil }
        batch.release()
        queue.waitUntilAllOperationsAreFinished()
    }
}
