import Foundation
@testable import RequestOperations
import Synchronization
import XCTest

/// Counts the change notifications the queue relies on.
private final class CountingOperation: AsyncOperation, @unchecked Sendable {
    let changes = Mutex<[String: Int]>([:])
    let delay: TimeInterval

    init(delay: TimeInterval) {
        self.delay = delay
    }

    override func announce(_ key: String, will: Bool) {
        changes.withLock { $0[(will ? "will " : "did ") + key, default: 0] += 1 }
        super.announce(key, will: will)
    }

    override func execute() {
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
            self.finish()
            self.finish() // a second call must change nothing
        }
    }
}

final class AsyncOperationTests: XCTestCase {
    func testExecutingAndFinishedEachFlipOnceAndTheQueueWaitsForTheEnd() {
        let queue = OperationQueue()
        let completions = Mutex(0)
        let operations = (0..<20).map { _ in CountingOperation(delay: 0.05) }
        for operation in operations {
            operation.completionBlock = { completions.withLock { $0 += 1 } }
        }
        let start = Date()
        queue.addOperations(operations, waitUntilFinished: false)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 0.045, "returned before the work ended")
        for operation in operations {
            XCTAssertTrue(operation.isFinished)
            XCTAssertFalse(operation.isExecuting)
            let changes = operation.changes.withLock { $0 }
            XCTAssertEqual(changes["will isExecuting"], 2, "\(changes)") // to true, then to false
            XCTAssertEqual(changes["did isExecuting"], 2)
            XCTAssertEqual(changes["will isFinished"], 1)
            XCTAssertEqual(changes["did isFinished"], 1)
        }
        usleep(20_000)
        XCTAssertEqual(completions.withLock { $0 }, 20)
    }

    func testDependenciesWaitForAnAsynchronousEnd() {
        let queue = OperationQueue()
        let first = CountingOperation(delay: 0.05)
        let second = BlockOperation()
        let sawFirstFinished = Mutex(false)
        second.addExecutionBlock { sawFirstFinished.withLock { $0 = first.isFinished } }
        second.addDependency(first)
        queue.addOperations([second, first], waitUntilFinished: true)
        XCTAssertTrue(sawFirstFinished.withLock { $0 })
    }
}
