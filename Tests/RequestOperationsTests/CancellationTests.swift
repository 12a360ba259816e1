import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Synchronization
import XCTest

/// Cancellation in every stage: the operation ends as cancelled within 100 ms, no further
/// request is sent, and its completion runs exactly once.
final class CancellationTests: XCTestCase {
    private func assertCancelledPromptly(_ operation: RequestOperation, _ counter: CompletionCounter, by who: String = "caller",
                                         file: StaticString = #filePath, line: UInt = #line) {
        let start = Date()
        operation.cancel()
        waitFor(1, "the completion", file: file, line: line) { counter.count == 1 }
        XCTAssertLessThan(Date().timeIntervalSince(start), 0.1, "cancel took too long", file: file, line: line)
        XCTAssertEqual(operation.result?.outcome, .cancelled, file: file, line: line)
        XCTAssertEqual(operation.result?.error, .cancelled(by: who), file: file, line: line)
        XCTAssertEqual(operation.phase, .finished(.cancelled), file: file, line: line)
    }

    func testWhileQueuedForASlot() throws {
        let server = try startServer()
        let queue = makeQueue(maxConcurrentRequests: 1)
        let blocker = queue.add(URLRequest(url: server.url("/hang")))
        waitFor(5, "the blocker to run") { blocker.phase == .inFlight }
        let counter = CompletionCounter()
        let queued = queue.add(URLRequest(url: server.url("/echo")), completion: counter.handler)
        waitFor(5, "the operation to wait for a slot") { queued.phase == .waitingForSlot }
        assertCancelledPromptly(queued, counter)
        blocker.cancel()
        queue.waitUntilAllOperationsAreFinished()
        usleep(100_000)
        XCTAssertEqual(server.counters.hits("/echo"), 0, "a cancelled queued operation sent its request")
        XCTAssertEqual(counter.count, 1)
        waitFor(2, "every slot to be given back") { queue.environment.gate?.inUse == 0 }
        XCTAssertEqual(queue.environment.gate?.waiting, 0)
    }

    func testWhilePreparing() throws {
        let server = try startServer()
        let queue = makeQueue()
        let counter = CompletionCounter()
        let slow = ClosurePreparer { request, _ in
            try await Task.sleep(nanoseconds: 5_000_000_000)
            return request
        }
        let operation = queue.add(URLRequest(url: server.url("/echo")), options: RequestOptions(preparer: slow), completion: counter.handler)
        waitFor(5, "preparation") { operation.phase == .preparing }
        assertCancelledPromptly(operation, counter)
        queue.waitUntilAllOperationsAreFinished()
        usleep(100_000)
        XCTAssertEqual(server.counters.hits("/echo"), 0)
        XCTAssertEqual(counter.count, 1)
        waitFor(2, "every slot to be given back") { queue.environment.gate?.inUse == 0 }
    }

    func testWhileInFlight() throws {
        let server = try startServer()
        let session = SharedSession()
        let queue = makeQueue(session: session)
        let recorder = EventRecorder(queue.events)
        let counter = CompletionCounter()
        let operation = queue.add(URLRequest(url: server.url("/hang")), id: "h", completion: counter.handler)
        waitFor(5, "the request to reach the server") { server.counters.hits("/hang") == 1 }
        assertCancelledPromptly(operation, counter)
        queue.waitUntilAllOperationsAreFinished()
        waitFor(2, "the task to be unrouted") { session.routedTaskCount == 0 }
        XCTAssertEqual(server.counters.hits("/hang"), 1)
        XCTAssertEqual(counter.count, 1)
        XCTAssertEqual(Array(recorder.names(of: "h").suffix(2)), ["cancelled", "finished"])
    }

    func testWhileWaitingToRetry() throws {
        let server = try startServer()
        let queue = makeQueue()
        let counter = CompletionCounter()
        let policy = ExponentialBackoffRetryPolicy(baseDelay: 30, jitter: .none, retryBudget: nil)
        let operation = queue.add(URLRequest(url: server.url("/status/503")), options: RequestOptions(retryPolicy: policy),
                                  completion: counter.handler)
        waitFor(5, "the backoff") { if case .waitingToRetry = operation.phase { true } else { false } }
        assertCancelledPromptly(operation, counter)
        queue.waitUntilAllOperationsAreFinished()
        usleep(100_000)
        XCTAssertEqual(server.counters.hits("/status/503"), 1, "a request was sent after cancel")
        XCTAssertEqual(counter.count, 1)
        XCTAssertEqual(queue.environment.recovery?.observerCount, 0)
    }

    func testBeforeItsQueueStartedIt() throws {
        let server = try startServer()
        let environment = RequestEnvironment(session: SharedSession(), transport: TestTransport.chosen)
        let counter = CompletionCounter()
        let operation = RequestOperation(request: URLRequest(url: server.url("/echo")), environment: environment, completion: counter.handler)
        assertCancelledPromptly(operation, counter)
        let queue = OperationQueue()
        queue.addOperations([operation], waitUntilFinished: true)
        XCTAssertTrue(operation.isFinished)
        XCTAssertEqual(counter.count, 1)
        XCTAssertEqual(server.counters.hits("/echo"), 0)
    }

    func testCancelAllEndsEveryStageAndRepeatedCancelsChangeNothing() throws {
        let server = try startServer()
        let queue = makeQueue(maxConcurrentRequests: 2)
        let recorder = EventRecorder(queue.events)
        let counter = CompletionCounter()
        let slowPolicy = ExponentialBackoffRetryPolicy(baseDelay: 30, jitter: .none, retryBudget: nil)
        // Built up in order, so the mix is certain: before, the four were added at once and
        // the echo could take the slot the 503 freed, leaving nothing waiting for a slot (the
        // wait below then timed out, once in a full run).
        let backoff = queue.add(URLRequest(url: server.url("/status/503")), options: RequestOptions(retryPolicy: slowPolicy), completion: counter.handler)
        waitFor(5, "the backoff") { if case .waitingToRetry = backoff.phase { true } else { false } }
        let hanging = [queue.add(URLRequest(url: server.url("/hang")), completion: counter.handler),
                       queue.add(URLRequest(url: server.url("/hang?b")), completion: counter.handler)]
        waitFor(5, "both slots in flight") { hanging.allSatisfy { $0.phase == .inFlight } }
        let waiting = queue.add(URLRequest(url: server.url("/echo")), completion: counter.handler)
        let operations = [backoff] + hanging + [waiting]
        waitFor(5, "a mix of stages") { waiting.phase == .waitingForSlot }
        queue.cancelAll()
        queue.cancelAll()
        operations.forEach { $0.cancel() }
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(counter.count, 4)
        let finished = recorder.all.filter { $0.payload.name == "finished" }
        XCTAssertEqual(finished.count, 4, "one finished event per operation")
        // A slot already on its way to a waiter that was just cancelled comes back through
        // the gate's hand-off queue, a moment later.
        waitFor(2, "every slot to be given back") { queue.environment.gate?.inUse == 0 }
    }
}
