import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Synchronization
import XCTest

/// `try await queue.response(for:)`, `value(_:for:)`, `operation.finished`, and Task
/// cancellation, against the fault server.
final class AsyncAPITests: XCTestCase {
    private struct Echo: Decodable, Sendable {
        let method: String
        let path: String
    }

    private struct Token: Decodable, Sendable {
        let token: String
    }

    func testAResponseReturnsTheResultAndAFailureThrowsTheWholeResult() async throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let result = try await queue.response(for: URLRequest(url: server.url("/echo")), id: "ok")
        XCTAssertEqual(result.status, 200)
        XCTAssertEqual(result.attempts.count, 1)

        do {
            _ = try await queue.response(for: URLRequest(url: server.url("/status/503")), id: "down",
                                         options: RequestOptions(retryPolicy: quickPolicy(maxAttempts: 2)))
            XCTFail("a 503 twice is a failure")
        } catch let error as RequestError {
            XCTAssertEqual(error.stage, .retriesExhausted)
            XCTAssertEqual(error.result.attempts.map(\.status), [503, 503], "the error carries every attempt")
            XCTAssertEqual(error.result.status, 503)
            XCTAssertEqual("\(error)", "status 503 after 2 attempts")
        }
    }

    func testAValueIsDecodedAndABadBodyFailsAtTheDecodingStageWithThePath() async throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let echo = try await queue.value(Echo.self, for: URLRequest(url: server.url("/echo/x")))
        XCTAssertEqual(echo.method, "GET")
        XCTAssertEqual(echo.path, "/echo/x")
        do {
            _ = try await queue.value(Token.self, for: URLRequest(url: server.url("/echo")))
            XCTFail("the echo has no token")
        } catch let error as RequestError {
            XCTAssertEqual(error.stage, .decoding)
            XCTAssertEqual(error.reason, .decoding("the body: missing field \"token\""))
            XCTAssertEqual(error.result.attempts.count, 1, "a decoding failure is not retried")
        }
    }

    func testAwaitingFinishedWaitsForTheEndWithoutRunningOrCancellingIt() async throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let operation = queue.add(URLRequest(url: server.url("/delay/100")))
        let first = await operation.finished
        let again = await operation.finished
        XCTAssertEqual(first.outcome, .success)
        XCTAssertEqual(again.duration, first.duration, "an ended operation answers at once, with the same result")
    }

    /// Cancelling the calling Task cancels the operation in each stage it can wait in.
    func testCancellingTheTaskCancelsTheOperationInEveryStage() async throws {
        let server = try startServer()
        let session = SharedSession()
        let queue = makeQueue(maxConcurrentRequests: 1, session: session, earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        // Occupies the one slot, so "queued" waits for it.
        let blocker = queue.add(URLRequest(url: server.url("/hang")), id: "blocker")
        // Operations start on the queue's threads in no set order: until the blocker holds
        // the slot, "queued" could take it first (it did once in CI) and simply run.
        let blocking = await eventually { blocker.phase == .inFlight }
        XCTAssert(blocking, "the blocker holds the one slot")
        let batch = RequestBatch(name: "never", size: 100)
        let reactor = RequestReactor(name: "slow-fix", decide: { $0.status == 503 ? .react(trigger: "status 503") : .ignore },
                                     run: { _ in try await Task.sleep(nanoseconds: 30_000_000_000) })
        let stages: [(id: String, url: String, options: RequestOptions, reached: @Sendable (RequestPhase) -> Bool)] = [
            ("queued", "/echo", RequestOptions(), { $0 == .waitingForSlot }),
            ("held", "/echo", RequestOptions(interceptors: [BatchingInterceptor(batch: batch)]), { if case .held = $0 { true } else { false } }),
            ("in-flight", "/hang", RequestOptions(), { $0 == .inFlight }),
            ("backoff", "/status/503", RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy(maxAttempts: 3, baseDelay: 30, jitter: .none)),
             { if case .waitingToRetry = $0 { true } else { false } }),
            ("reactor", "/status/503", RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy.never, reactors: [reactor]),
             { if case .waitingForReactor = $0 { true } else { false } }),
        ]
        for stage in stages {
            if stage.id == "in-flight" || stage.id == "backoff" || stage.id == "reactor" {
                blocker.cancel()  // these need the slot
            }
            let task = Task { try await queue.response(for: URLRequest(url: server.url(stage.url)), id: stage.id, options: stage.options) }
            let reached = await eventually { queue.operation(withID: stage.id).map { stage.reached($0.phase) } ?? false }
            XCTAssert(reached, "\(stage.id) reached its stage")
            let cancelledAt = Date()
            task.cancel()
            do {
                _ = try await task.value
                XCTFail("\(stage.id): the call returned")
            } catch is CancellationError {
                let took = Date().timeIntervalSince(cancelledAt)
                print("cancelled \(stage.id) in \(String(format: "%.1f", took * 1000)) ms")
                XCTAssertLessThan(took, 1, "\(stage.id): ended at once, not at the end of its wait")
            }
            let events = recorder.events(of: stage.id).map(\.payload)
            XCTAssert(events.contains(.cancelled(by: "task")), "\(stage.id): \(events)")
            XCTAssertEqual(events.filter { $0.name == "finished" }.count, 1, stage.id)
        }
        let routed = await eventually(2) { session.routedTaskCount == 0 }
        XCTAssert(routed, "the routing table is empty: \(session.routedTaskCount) left")
    }

    /// Cancelled by anything but the calling Task (here `cancelAll`): a RequestError, not a
    /// CancellationError, so the caller can tell "I gave up" from "it was stopped".
    func testACancelByOthersThrowsARequestErrorThatSaysWho() async throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let task = Task { try await queue.response(for: URLRequest(url: server.url("/hang")), id: "stopped") }
        let running = await eventually { queue.operation(withID: "stopped")?.phase == .inFlight }
        XCTAssert(running)
        queue.cancelAll()
        do {
            _ = try await task.value
            XCTFail("the call returned")
        } catch let error as RequestError {
            XCTAssertEqual(error.reason, .cancelled(by: "cancelAll"))
            XCTAssertEqual(error.stage, .cancelled)
            XCTAssertEqual(error.result.outcome, .cancelled)
        }
    }

    func testATaskCancelledBeforeTheCallSendsNothing() async throws {
        let counters = FaultCounters()
        let server = try startServer(counters: counters)
        let queue = makeQueue(earlyRetry: nil)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await queue.response(for: URLRequest(url: server.url("/echo")), id: "early")
        }
        do {
            _ = try await task.value
            XCTFail("the call returned")
        } catch {
            XCTAssert(error is CancellationError, "\(error)")
        }
        XCTAssertEqual(counters.hits("/echo"), 0)
    }

    /// A group of 500 calls cancelled halfway leaves nothing running and nothing routed.
    func testAGroupOfFiveHundredCancelledHalfwayLeavesNothingBehind() async throws {
        let server = try startServer()
        let session = SharedSession()  // its own, so its routing table is this test's alone
        let queue = makeQueue(maxConcurrentRequests: 16, session: session, earlyRetry: nil)
        let urls = (0..<500).map { server.url("/delay/\(20 + $0 % 5 * 10)") }
        let outcomes = await withTaskGroup(of: String.self) { group -> [String: Int] in
            for index in 0..<500 {
                group.addTask {
                    do {
                        _ = try await queue.response(for: URLRequest(url: urls[index]), id: "g\(index)")
                        return "success"
                    } catch is CancellationError {
                        return "cancelled"
                    } catch {
                        return "\(error)"
                    }
                }
            }
            var counts: [String: Int] = [:]
            for await outcome in group {
                counts[outcome, default: 0] += 1
                if counts.values.reduce(0, +) == 250 { group.cancelAll() }
            }
            return counts
        }
        XCTAssertEqual(outcomes.values.reduce(0, +), 500)
        XCTAssertEqual(Set(outcomes.keys).subtracting(["success", "cancelled"]), [], "\(outcomes)")
        XCTAssertGreaterThan(outcomes["cancelled", default: 0], 100, "\(outcomes)")
        let empty = await eventually { queue.operations.isEmpty }
        XCTAssert(empty, "no operation left running")
        // A cancelled task leaves the table when URLSession reports its end, a moment later.
        let routed = await eventually(2) { session.routedTaskCount == 0 }
        XCTAssert(routed, "the routing table is empty: \(session.routedTaskCount) left")
    }

    /// Polls `condition` every 5 ms for up to `timeout` seconds, without blocking a thread.
    private func eventually(_ timeout: TimeInterval = 5, _ condition: () -> Bool) async -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if condition() { return true }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        return condition()
    }
}
