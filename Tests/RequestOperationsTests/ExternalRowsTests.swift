import Foundation
@testable import RequestOperations
import Synchronization
import Testing

/// Rows that are not operations (a proxy's tunnels) are cancelled by a person's cancel and
/// cancel-all, once, and nothing else a command does reaches them.
@Suite("Rows that are not operations")
struct ExternalRowsTests {
    @Test func cancelAndCancelAllReachThemOnceAndNothingElseDoes() {
        let queue = RequestQueue(earlyRetry: nil)
        let cancelled = Mutex<[String]>([])
        for id in ["t1", "t2", "t3"] {
            queue.externalRows.add(id) { who in cancelled.withLock { $0.append("\(id) by \(who)") } }
        }
        let control = QueueControl(queue: queue, actor: "monitor")
        #expect(control.perform(.retry(operation: "t1")).outcome == .unknownOperation(operation: "t1"))
        #expect(control.perform(.resolveBreakpoint(operation: "t1", resolution: .proceed)).outcome == .unknownOperation(operation: "t1"))
        #expect(cancelled.withLock { $0 }.isEmpty, "only a cancel reaches a tunnel")

        #expect(control.perform(.cancel(operation: "t1")).outcome == .cancelled(operation: "t1"))
        #expect(control.perform(.cancel(operation: "t1")).outcome == .unknownOperation(operation: "t1"), "once")
        queue.externalRows.remove("t3")  // it ended by itself
        #expect(control.perform(.cancelAll).outcome == .cancelledAll(count: 1))
        #expect(cancelled.withLock { $0 } == ["t1 by monitor", "t2 by monitor"])
    }
}
