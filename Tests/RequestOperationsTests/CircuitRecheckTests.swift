import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import RequestTransportNIO
import Testing

/// An open breaker stops every attempt that has not yet reached the transport, on every
/// transport: attempts let through while the breaker was closed wait for slots, and before
/// this they went out when they got one (42 connection attempts to a dead host in the 10 ms
/// after its breaker opened).
@Suite("An open breaker stops queued attempts", .serialized)
struct CircuitRecheckTests {
    @Test(arguments: TransportKind.allCases)
    func noAttemptReachesTheTransportAfterTheBreakerOpened(_ kind: TransportKind) async throws {
        let dead = try FaultServer.start()
        let url = dead.url("/status/200")
        dead.stop()
        let queue = RequestQueue(maxConcurrentRequests: 8, transport: kind.make(), earlyRetry: nil, retryBudget: nil)
        let recorder = EventRecorder(queue.events)
        let options = RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy(maxAttempts: 1), deadline: 1)
        let done = await withTaskGroup(of: Int.self) { group in
            for index in 0..<50 {
                group.addTask {
                    _ = try? await queue.response(for: URLRequest(url: url), id: "dead-\(index)", options: options)
                    return 1
                }
            }
            return await group.reduce(0, +)
        }
        #expect(done == 50)
        let events = recorder.all
        let opened = try #require(events.firstIndex { if case .circuitOpened = $0.payload { true } else { false } },
                                  "the breaker opened")
        let openedAt = events[opened].time
        let sentAfter = events.filter { event in
            guard case .taskCreated = event.payload else { return false }
            return event.time > openedAt
        }
        let sentBefore = events.filter { event in
            guard case .taskCreated = event.payload else { return false }
            return event.time <= openedAt
        }
        // An attempt that asked the breaker a moment before it opened may still go (the
        // check and the hand-over are not one step): at most the 8 holding slots then (3 were
        // seen under CI's load); dozens may not (42 before the recheck).
        #expect(sentAfter.count <= 8, "\(sentAfter.count) attempts reached the transport after the breaker opened (\(sentBefore.count) before)")
        let waited = events.filter { if case .circuitWaiting = $0.payload { true } else { false } }
        #expect(waited.count >= 30, "the others waited for the breaker: \(waited.count)")
    }
}
