import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import XCTest

/// `queue.events.stream()`: in order, never slowing the engine, telling what it missed, and
/// gone from the hub when the loop ends.
final class EventStreamTests: XCTestCase {
    func testEachOperationsEventsComeInOrderAndTheSubscriptionGoesWithTheLoop() async throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let before = queue.events.subscriberCount
        let reader = Task { () -> [RequestEvent] in
            var seen: [RequestEvent] = []
            for await event in queue.events.stream() {
                seen.append(event)
                if seen.filter({ $0.payload.name == "finished" }).count == 20 { break }
            }
            return seen
        }
        try await Task.sleep(nanoseconds: 50_000_000)  // the loop has begun (its subscription exists)
        XCTAssertEqual(queue.events.subscriberCount, before + 1)
        for index in 0..<20 {
            queue.add(URLRequest(url: server.url(index % 4 == 0 ? "/flaky/s\(index)?failures=1" : "/echo")), id: "s\(index)",
                      options: RequestOptions(retryPolicy: quickPolicy()))
        }
        let seen = await reader.value
        for index in 0..<20 {
            let names = seen.filter { $0.operationID == "s\(index)" }.map(\.payload.name)
            XCTAssertEqual(names.first, "queued")
            XCTAssertEqual(names.last, "finished")
            XCTAssertEqual(names.filter { $0 == "started" }.count, index % 4 == 0 ? 2 : 1, "s\(index): \(names)")
        }
        XCTAssertEqual(seen.map(\.time), seen.map(\.time).sorted(), "the hub's order")
        let gone = await eventually { queue.events.subscriberCount == before }
        XCTAssert(gone, "leaving the loop removed the subscription")
    }

    func testAConsumerThatFallsBehindIsToldHowManyItMissedAndWhere() async throws {
        let hub = EventHub(deliveryDelay: 0)
        let stream = hub.stream(bufferLimit: 10)
        var iterator = stream.makeAsyncIterator()
        for index in 0..<25 {
            hub.publish(operation: "op", attempt: 1, .data(bytes: index))
        }
        hub.waitUntilDelivered()
        hub.publish(operation: "op", attempt: 1, .data(bytes: 99))  // a later batch, still no room: counted too
        hub.waitUntilDelivered()
        var got: [RequestEvent.Payload] = []
        for _ in 0..<11 { got.append(await iterator.next()!.payload) }
        XCTAssertEqual(got, (0..<10).map { .data(bytes: $0) } + [.missed(count: 16)], "the first 10, then the 16 dropped")
        hub.publish(operation: "op", attempt: 1, .data(bytes: 100))
        hub.waitUntilDelivered()
        let after = await iterator.next()
        XCTAssertEqual(after?.payload, .data(bytes: 100), "events after the gap come on")
        XCTAssertEqual(after?.operationID, "op")
    }

    func testCancellingTheConsumersTaskEndsTheLoopAndRemovesTheSubscription() async throws {
        let hub = EventHub()
        let reader = Task { () -> Int in
            var count = 0
            for await _ in hub.stream() { count += 1 }
            return count
        }
        let subscribed = await eventually { hub.subscriberCount == 1 }
        XCTAssert(subscribed)
        hub.publish(operation: "a", attempt: 1, .started)
        reader.cancel()
        let count = await reader.value
        XCTAssertLessThanOrEqual(count, 1)
        XCTAssertEqual(hub.subscriberCount, 0, "the subscription went with the loop")
    }

    private func eventually(_ timeout: TimeInterval = 5, _ condition: () -> Bool) async -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if condition() { return true }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        return condition()
    }
}
