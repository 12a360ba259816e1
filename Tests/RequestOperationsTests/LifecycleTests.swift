import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Synchronization
import XCTest

final class LifecycleTests: XCTestCase {
    func testASuccessPublishesEveryStageInOrder() throws {
        let server = try startServer()
        let queue = makeQueue()
        let recorder = EventRecorder(queue.events)
        let operation = queue.add(URLRequest(url: server.url("/bytes/100")), id: "one")
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(recorder.names(of: "one"), ["queued", "started", "taskCreated"] + TestTransport.phasesWhereKnown
                       + ["response", "data", "responseBody", "taskCompleted", "finished"])
        XCTAssertEqual(operation.result?.status, 200)
        XCTAssertEqual(operation.result?.data.count, 100)
        XCTAssertEqual(operation.phase, .finished(.success))
    }

    /// The timers an operation sets, the breaker's wake-up and the transport's task hold it
    /// strongly while it runs; once it has ended (succeeded, failed, cancelled in flight)
    /// nothing does: no cycle is left behind.
    func testAnEndedOperationIsFreed() throws {
        let server = try startServer()
        weak var succeeded: RequestOperation?, failed: RequestOperation?, cancelled: RequestOperation?, queueLeft: RequestQueue?
        do {
            let queue = makeQueue()
            let options = RequestOptions(retryPolicy: .never, attemptTimeout: 30, deadline: 60)
            succeeded = queue.add(URLRequest(url: server.url("/bytes/10")), options: options)
            failed = queue.add(URLRequest(url: server.url("/status/500")), options: options)
            let slow = queue.add(URLRequest(url: server.url("/delay/5000")), options: options)
            cancelled = slow
            waitFor(5, "the slow request in flight") { slow.phase == .inFlight }
            slow.cancel()
            queue.waitUntilAllOperationsAreFinished()
            queueLeft = queue
        }
        // The transport lets go of a task on its own thread just after the end.
        let until = Date() + 5
        while [succeeded, failed, cancelled].contains(where: { $0 != nil }) || queueLeft != nil, Date() < until {
            usleep(10_000)
        }
        XCTAssertNil(queueLeft, "the queue")
        XCTAssertNil(succeeded, "the operation that succeeded")
        XCTAssertNil(failed, "the operation that failed")
        XCTAssertNil(cancelled, "the operation cancelled in flight")
    }

    func testThePreparerRunsOnTheQueueTheCallerNamesForEveryAttempt() throws {
        let server = try startServer()
        let queue = makeQueue()
        let preparationQueue = DispatchQueue(label: "test.preparation")
        let key = DispatchSpecificKey<String>()
        preparationQueue.setSpecific(key: key, value: "mine")
        let seen = Mutex<[String]>([])
        let preparer = QueuePreparer(queue: preparationQueue) { request, attempt in
            seen.withLock { $0.append("\(attempt):\(DispatchQueue.getSpecific(key: key) ?? "other")") }
            var request = request
            request.setValue("attempt-\(attempt)", forHTTPHeaderField: "X-Signed")
            return request
        }
        let operation = queue.add(URLRequest(url: server.url("/flaky/p?failures=1")),
                                  options: RequestOptions(retryPolicy: quickPolicy(), preparer: preparer))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.outcome, .success)
        XCTAssertEqual(seen.withLock { $0 }, ["1:mine", "2:mine"])
    }

    func testAPreparationFailureGoesToTheRetryDecision() throws {
        let server = try startServer()
        let queue = makeQueue()
        let recorder = EventRecorder(queue.events)
        struct NoToken: Error {}
        let preparer = ClosurePreparer { request, attempt in
            if attempt == 1 { throw NoToken() }
            return request
        }
        let operation = queue.add(URLRequest(url: server.url("/echo")), id: "prep",
                                  options: RequestOptions(retryPolicy: quickPolicy(), preparer: preparer))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.outcome, .success)
        XCTAssertEqual(server.counters.hits("/echo"), 1, "the failed preparation must not send")
        let names = recorder.names(of: "prep")
        XCTAssertEqual(Array(names.prefix(4)), ["queued", "started", "preparationFailed", "retryScheduled"])
    }

    func testAnInvalidResponseCanCancelTheTaskAtOnce() throws {
        let server = try startServer()
        let queue = makeQueue()
        let recorder = EventRecorder(queue.events)
        // A 5-second drip of octet-stream, where JSON was expected.
        let validator = StandardResponseValidator(acceptableContentTypes: ["application/json"])
        let start = Date()
        let operation = queue.add(URLRequest(url: server.url("/drip?bytes=5000&duration=5000")), id: "v",
                                  options: RequestOptions(validator: validator, cancelOnInvalidResponse: true))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertLessThan(Date().timeIntervalSince(start), 2, "the body was read instead of cancelled")
        XCTAssertEqual(operation.result?.error, .validation(#"content type "application/octet-stream" is not one of application/json"#))
        XCTAssert(recorder.names(of: "v").contains("validationFailed"))
        XCTAssertEqual(operation.attempts.count, 1, "a validation failure is not retried")
    }

    func testAnInvalidStatusKeepsItsBodyForInspection() throws {
        let server = try startServer()
        let queue = makeQueue()
        let operation = queue.add(URLRequest(url: server.url("/status/404")))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.error, .status(404))
        XCTAssertEqual(String(decoding: operation.result?.data ?? Data(), as: UTF8.self), "status 404\n")
    }

    func testAnAuthenticationChallengeEndsWithTheFinalResponseAndDoesNotHang() throws {
        let server = try startServer()
        let queue = makeQueue()
        let recorder = EventRecorder(queue.events)
        let operation = queue.add(URLRequest(url: server.url("/status/401?www-authenticate=Basic")), id: "auth",
                                  options: RequestOptions(deadline: 5))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.status, 401)
        XCTAssertEqual(operation.result?.error, .status(401))
        XCTAssertEqual(String(decoding: operation.result?.data ?? Data(), as: UTF8.self), "status 401\n")
        XCTAssert(recorder.events(of: "auth").contains { $0.payload == .taskCompleted(error: nil) })
    }

    func testRedirectsArePublishedAndFollowed() throws {
        let server = try startServer()
        let queue = makeQueue()
        let recorder = EventRecorder(queue.events)
        let operation = queue.add(URLRequest(url: server.url("/redirect/3")), id: "r")
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.status, 200)
        let redirects = recorder.events(of: "r").compactMap { event -> Int? in
            if case .redirect(let status, _, _, _) = event.payload { return status }
            return nil
        }
        XCTAssertEqual(redirects, [302, 302, 302])
    }

    func testEachAttemptRecordsItsOwnTimings() throws {
        let server = try startServer()
        let queue = makeQueue()
        let operation = queue.add(URLRequest(url: server.url("/flaky/t?failures=1")), options: RequestOptions(retryPolicy: quickPolicy()))
        queue.waitUntilAllOperationsAreFinished()
        let attempts = operation.attempts
        XCTAssertEqual(attempts.map(\.number), [1, 2])
        XCTAssertEqual(attempts.map(\.status), [503, 200])
        for attempt in attempts {
            let times = [attempt.queuedAt, attempt.startedAt, attempt.sentAt, attempt.responseAt, attempt.firstByteAt, attempt.endedAt]
            XCTAssert(times.allSatisfy { $0 != nil }, "\(attempt)")
            let values = times.compactMap { $0 }
            XCTAssertEqual(values, values.sorted(), "timings out of order: \(attempt)")
        }
        XCTAssertEqual(attempts[0].retryDelay, 0.05)
        XCTAssertGreaterThanOrEqual(attempts[1].startedAt! - attempts[0].endedAt!, 0.05)
    }

    func testConnectionFailuresAreTransportErrors() throws {
        let server = try startServer()
        let queue = makeQueue()
        let closed = queue.add(URLRequest(url: server.url("/close-mid-body?bytes=10000")), options: RequestOptions(retryPolicy: .never))
        let reset = queue.add(URLRequest(url: server.url("/reset")), options: RequestOptions(retryPolicy: .never))
        queue.waitUntilAllOperationsAreFinished()
        for operation in [closed, reset] {
            guard case .transport(let error)? = operation.result?.error else {
                return XCTFail("\(String(describing: operation.result?.error))")
            }
            XCTAssert([URLError.Code.networkConnectionLost.rawValue, URLError.Code.badServerResponse.rawValue,
                       URLError.Code.cannotParseResponse.rawValue].contains(error.code), "\(error)")
        }
    }
}
