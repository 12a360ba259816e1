import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import XCTest

/// A queue remembers finished operations by id (so a monitor can re-run one), but not
/// their bodies without end: a service that downloads a megabyte a minute runs for days.
final class RecentOperationsTests: XCTestCase {
    func testFinishedOperationsHoldingMoreThan16MiBOfBodiesAreForgottenOldestFirst() throws {
        let server = try startServer()
        let queue = makeQueue(maxConcurrentRequests: 4, earlyRetry: nil)
        for index in 0..<40 {
            queue.add(URLRequest(url: server.url("/bytes/1048576?seed=\(index)")), id: "big-\(index)")
            queue.waitUntilAllOperationsAreFinished()  // in order, so "oldest" is clear
        }
        for index in 0..<64 {
            queue.add(URLRequest(url: server.url("/echo")), id: "small-\(index)")
        }
        queue.waitUntilAllOperationsAreFinished()
        queue.add(URLRequest(url: server.url("/echo")), id: "one-more")  // the 105th add looks again
        queue.waitUntilAllOperationsAreFinished()
        let kept = (0..<40).filter { queue.operation(withID: "big-\($0)") != nil }
        // The newest 16 MiB of bodies: sixteen of these, or fifteen when the small answers
        // (about 270 bytes each) had finished by the time of the look and count too.
        XCTAssert((15...16).contains(kept.count), "\(kept)")
        XCTAssertEqual(kept, Array((40 - kept.count)..<40), "the newest are kept, the older ones forgotten")
        XCTAssertNotNil(queue.operation(withID: "small-0"), "small ones stay within the count limit")
    }

    func testPastTwoThousandTheFirstToFinishAreForgotten() {
        let queue = makeQueue(maxConcurrentRequests: 4, earlyRetry: nil)
        queue.isSuspended = true  // nothing is sent: operations wait for a slot until cancelled
        let url = URL(string: "http://127.0.0.1:9/never")!
        let operations = (0..<2_100).map { queue.add(URLRequest(url: url), id: "op-\($0)") }
        // Every one started (waiting for a slot), so each finishes as it is cancelled.
        let deadline = Date().addingTimeInterval(10)
        while !operations.allSatisfy(\.isExecuting), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        operations[1_500].cancel()  // finishes first of all
        operations[0..<1_000].forEach { $0.cancel() }
        queue.cancelAll()
        queue.waitUntilAllOperationsAreFinished()
        let forgotten = (0..<2_100).filter { queue.operation(withID: "op-\($0)") == nil }
        XCTAssertEqual(forgotten, Array(0..<99) + [1_500], "the first 100 to finish")
    }

    /// A body read in parts grows by doubling; what the queue keeps is the body's size, not
    /// that room (a soak of the demo held 25 blocks of 1.83 MB for its 1 MB downloads).
    func testALargeBodyIsKeptAtItsOwnSize() throws {
        #if !os(Linux)
        throw XCTSkip("reads glibc's malloc_usable_size")
        #else
        let server = try startServer()
        let queue = makeQueue(maxConcurrentRequests: 1, earlyRetry: nil)
        let operation = queue.add(URLRequest(url: server.url("/drip?bytes=1000000&duration=200&chunks=40")))
        queue.waitUntilAllOperationsAreFinished()
        let data = try XCTUnwrap(operation.result?.data)
        XCTAssertEqual(data.count, 1_000_000)
        // The block malloc gave the bytes (a large one is mmapped: its size rounded to a page).
        let held = data.withUnsafeBytes { mallocUsableSize(UnsafeMutableRawPointer(mutating: $0.baseAddress)) }
        XCTAssertLessThan(held, 1_000_000 + 2 * 4096, "held \(held) bytes for a body of 1,000,000")
        // One copy: what the operation keeps of its answer is the result's bytes.
        let shared = try XCTUnwrap(operation.state.withLock { $0.answer.body }).withUnsafeBytes { $0.baseAddress }
        XCTAssertEqual(shared, data.withUnsafeBytes { $0.baseAddress })
        #endif
    }
}

#if os(Linux)
/// glibc's `malloc_usable_size` (not in Swift's Glibc module): the size of the block at `pointer`.
@_silgen_name("malloc_usable_size")
private func mallocUsableSize(_ pointer: UnsafeMutableRawPointer?) -> Int
#endif
