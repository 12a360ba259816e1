import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import RequestTransportNIO
import Synchronization
import Testing

/// On the NIO transport a queue starts an operation added on an event loop (a completion
/// handler adding the next request) itself, without its `OperationQueue`. Such an operation
/// must still be listed, waited for and cancelled like any other; anything else goes
/// through the `OperationQueue` as before.
@Suite("A queue starting operations itself on NIO", .serialized)
struct SelfStartedOperationsTests {
    private struct Seen {
        var next: RequestOperation?
        var inOperationQueue: Bool?
        var listed: Bool?
    }

    private final class Noted: Sendable {
        let seen = Mutex(Seen())
    }

    /// Adds `first`; its completion handler adds the second request (with `dependencies`)
    /// and notes where that operation went.
    private func chain(on queue: RequestQueue, to second: URL, from first: URL, dependencies: [Operation] = []) -> Noted {
        let noted = Noted()
        let added = DispatchSemaphore(value: 0)
        queue.add(URLRequest(url: first), id: "first", options: RequestOptions(retryPolicy: .never)) { _ in
            let next = queue.add(URLRequest(url: second), id: "second", options: RequestOptions(retryPolicy: .never), dependencies: dependencies)
            noted.seen.withLock {
                $0.next = next
                $0.inOperationQueue = queue.operationQueue.operations.contains(next)
                $0.listed = queue.operations.contains(next)
            }
            added.signal()
        }
        added.wait()
        return noted
    }

    @Test func anOperationAddedOnAnEventLoopIsStartedByTheQueueListedAndWaitedFor() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: NIOTransport.shared, earlyRetry: nil)
        let seen = chain(on: queue, to: server.url("/delay/300"), from: server.url("/echo"))
        #expect(seen.seen.withLock { $0.inOperationQueue } == false, "started by the queue, not its OperationQueue")
        #expect(seen.seen.withLock { $0.listed } == true)
        queue.waitUntilAllOperationsAreFinished()
        let next = try #require(seen.seen.withLock { $0.next })
        #expect(next.isFinished, "the wait covers operations the queue started itself")
        #expect(next.result?.outcome == .success)
        #expect(queue.operations.isEmpty)
        #expect(queue.operation(withID: "second") === next)
    }

    @Test func cancelAllReachesAnOperationTheQueueStartedItself() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: NIOTransport.shared, earlyRetry: nil)
        let seen = chain(on: queue, to: server.url("/delay/10000"), from: server.url("/echo"))
        let started = Date()
        queue.cancelAll()
        queue.waitUntilAllOperationsAreFinished()
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(seen.seen.withLock { $0.next?.result?.outcome } == .cancelled)
    }

    @Test func anOperationWithDependenciesOrAddedElsewhereGoesThroughTheOperationQueue() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: NIOTransport.shared, earlyRetry: nil)
        let parent = queue.add(URLRequest(url: server.url("/delay/200")), id: "parent")
        #expect(queue.operationQueue.operations.contains(parent), "added from a thread that is no event loop")
        let seen = chain(on: queue, to: server.url("/echo"), from: server.url("/echo"), dependencies: [parent])
        #expect(seen.seen.withLock { $0.inOperationQueue } == true, "it waits for its parent")
        queue.waitUntilAllOperationsAreFinished()
        #expect(seen.seen.withLock { $0.next?.result?.outcome } == .success)
    }
}
