import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Synchronization
import XCTest

final class EventDeliveryTests: XCTestCase {
    func testEverySubscriberSeesEveryEventInTheSameOrderWithTimeNeverGoingBack() throws {
        let server = try startServer()
        let queue = makeQueue(maxConcurrentRequests: 8)
        let first = EventRecorder(queue.events)
        let second = EventRecorder(queue.events)
        for index in 0..<50 {
            queue.add(URLRequest(url: server.url(index % 3 == 0 ? "/flaky/d\(index)?failures=1" : "/bytes/5000?seed=\(index)")),
                      options: RequestOptions(retryPolicy: quickPolicy()))
        }
        queue.waitUntilAllOperationsAreFinished()
        let events = first.all
        XCTAssertEqual(events, second.all)
        XCTAssertEqual(events.map(\.time), events.map(\.time).sorted())
        XCTAssertEqual(events.filter { $0.payload.name == "finished" }.count, 50)

        // Per operation: the lifecycle grammar holds, attempt numbers only go up.
        // Host-level events (`op` empty: the retry budget after each retry) are no operation's.
        for id in Set(events.map(\.operationID)) where !id.isEmpty {
            let own = events.filter { $0.operationID == id }
            XCTAssertEqual(own.first?.payload.name, "queued")
            XCTAssertEqual(own.last?.payload.name, "finished")
            XCTAssertEqual(own.map(\.attempt), own.map(\.attempt).sorted(), id)
            for (before, after) in zip(own, own.dropFirst()) where after.payload.name == "started" {
                XCTAssert(["queued", "retryScheduled", "earlyRetry"].contains(before.payload.name), "\(id): \(before.payload.name) → started")
            }
        }
    }

    func testASlowSubscriberNeitherSlowsTheEngineNorLosesEvents() throws {
        let server = try startServer()
        let queue = makeQueue(maxConcurrentRequests: 8)
        let seen = Mutex<[RequestEvent]>([])
        let slow = queue.events.subscribe { batch in
            if seen.withLock({ $0.isEmpty }) { Thread.sleep(forTimeInterval: 1.5) }
            seen.withLock { $0 += batch }
        }
        defer { slow.cancel() }
        let fast = EventRecorder(queue.events)
        let start = Date()
        for index in 0..<40 {
            queue.add(URLRequest(url: server.url("/bytes/100?seed=\(index)")))
        }
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertLessThan(Date().timeIntervalSince(start), 1.2, "the engine waited for a subscriber")
        queue.events.waitUntilDelivered()
        XCTAssertEqual(seen.withLock { $0 }, fast.all)
    }

    func testACancelledSubscriptionGetsNothingMore() throws {
        let hub = EventHub()
        let count = Mutex(0)
        let subscription = hub.subscribe { batch in count.withLock { $0 += batch.count } }
        hub.publish(operation: "a", attempt: 1, .started)
        hub.waitUntilDelivered()
        subscription.cancel()
        hub.publish(operation: "a", attempt: 1, .started)
        hub.waitUntilDelivered()
        XCTAssertEqual(count.withLock { $0 }, 1)
        XCTAssertEqual(hub.subscriberCount, 0)
    }
}
