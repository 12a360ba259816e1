import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Synchronization
import XCTest

final class ManualClockTests: XCTestCase {
    func testTimersFireInDeadlineOrderOnlyWhenTimeReachesThem() {
        let clock = ManualClock(now: 100)
        let fired = Mutex<[String]>([])
        _ = clock.schedule(at: 102) { fired.withLock { $0.append("b") } }
        _ = clock.schedule(at: 101) { fired.withLock { $0.append("a") } }
        let cancelled = clock.schedule(at: 101.5) { fired.withLock { $0.append("x") } }
        cancelled.cancel()
        clock.advance(by: 0.999)
        XCTAssertEqual(fired.withLock { $0 }, [])
        clock.advance(by: 0.001)
        XCTAssertEqual(fired.withLock { $0 }, ["a"])
        clock.advance(by: 5)
        XCTAssertEqual(fired.withLock { $0 }, ["a", "b"])
        XCTAssertEqual(clock.now(), 106)
    }

    func testWorkScheduledByAFiredTimerFiresInTheSameAdvance() {
        let clock = ManualClock(now: 0)
        let fired = Mutex(0)
        _ = clock.schedule(at: 1) {
            fired.withLock { $0 += 1 }
            _ = clock.schedule(at: 2) { fired.withLock { $0 += 1 } }
        }
        clock.advance(by: 3)
        XCTAssertEqual(fired.withLock { $0 }, 2)
    }

    func testSystemClockTimersFireAndCanBeCancelled() {
        let clock = SystemClock()
        let fired = expectation(description: "fired")
        _ = clock.schedule(at: clock.now() + 0.02) { fired.fulfill() }
        let never = clock.schedule(at: clock.now() + 0.01) { XCTFail("a cancelled timer fired") }
        never.cancel()
        wait(for: [fired], timeout: 2)
        usleep(30_000)
    }
}

final class ConcurrencyGateTests: XCTestCase {
    func testSlotsAreGrantedUpToTheLimitThenFirstInFirstOut() {
        let gate = ConcurrencyGate(limit: 2, handoff: nil)
        let granted = Mutex<[Int]>([])
        for index in 1...4 {
            gate.acquire { granted.withLock { $0.append(index) } }
        }
        XCTAssertEqual(granted.withLock { $0 }, [1, 2])
        XCTAssertEqual(gate.waiting, 2)
        gate.release()
        XCTAssertEqual(granted.withLock { $0 }, [1, 2, 3])
        gate.release()
        gate.release()
        XCTAssertEqual(granted.withLock { $0 }, [1, 2, 3, 4])
        XCTAssertEqual(gate.inUse, 1)
    }

    func testAWithdrawnWaiterIsNeverGranted() {
        let gate = ConcurrencyGate(limit: 1, handoff: nil)
        gate.acquire {}
        let ticket = gate.acquire { XCTFail("withdrawn waiter granted") }
        XCTAssertTrue(gate.withdraw(ticket))
        XCTAssertFalse(gate.withdraw(ticket))
        gate.release()
        XCTAssertEqual(gate.inUse, 0)
    }

    func testPausingHoldsNewGrantsUntilResumed() {
        let gate = ConcurrencyGate(limit: 5, handoff: nil)
        gate.isPaused = true
        let granted = Mutex(0)
        gate.acquire { granted.withLock { $0 += 1 } }
        XCTAssertEqual(granted.withLock { $0 }, 0)
        gate.isPaused = false
        XCTAssertEqual(granted.withLock { $0 }, 1)
    }

    func testRaisingTheLimitGrantsWaiters() {
        let gate = ConcurrencyGate(limit: 1, handoff: nil)
        let granted = Mutex(0)
        for _ in 1...3 { gate.acquire { granted.withLock { $0 += 1 } } }
        gate.limit = 3
        XCTAssertEqual(granted.withLock { $0 }, 3)
    }

    func testDeferredGrantsRunOnTheHandoffQueueNotTheReleasingThread() {
        let handoff = DispatchQueue(label: "test.handoff")
        let key = DispatchSpecificKey<Bool>()
        handoff.setSpecific(key: key, value: true)
        let gate = ConcurrencyGate(limit: 2, handoff: handoff)
        let onHandoff = Mutex<Bool?>(nil)
        let granted = expectation(description: "granted")
        gate.acquire {}
        gate.acquire {}
        gate.acquire {
            onHandoff.withLock { $0 = DispatchQueue.getSpecific(key: key) ?? false }
            granted.fulfill()
        }
        gate.release()
        wait(for: [granted], timeout: 2)
        XCTAssertEqual(onHandoff.withLock { $0 }, true)
    }

    func testWhenNothingElseIsInFlightTheNextWaiterStartsOnTheReleasingThread() {
        let gate = ConcurrencyGate(limit: 1, handoff: DispatchQueue(label: "test.unused"))
        let granted = Mutex(false)
        gate.acquire {}
        gate.acquire { granted.withLock { $0 = true } }
        gate.release()
        XCTAssertTrue(granted.withLock { $0 }, "granted before release() returned")
        XCTAssertEqual(gate.inUse, 1)
    }

    func testHigherPriorityWaitersAreServedFirstThenInOrder() {
        let gate = ConcurrencyGate(limit: 1, handoff: nil)
        let granted = Mutex<[String]>([])
        gate.acquire { granted.withLock { $0.append("running") } }
        for (name, priority) in [("low", -4), ("normal-1", 0), ("high", 8), ("normal-2", 0), ("high-2", 8)] {
            gate.acquire(priority: priority) { granted.withLock { $0.append(name) } }
        }
        for _ in 0..<5 { gate.release() }
        XCTAssertEqual(granted.withLock { $0 }, ["running", "high", "high-2", "normal-1", "normal-2", "low"])
    }

    func testAHostAtItsLimitDoesNotHoldUpOtherHosts() {
        let gate = ConcurrencyGate(limit: 4, perHostLimit: 2, handoff: nil)
        let granted = Mutex<[String]>([])
        for name in ["a1", "a2", "a3", "b1", "a4", "b2"] {
            gate.acquire(host: String(name.prefix(1))) { granted.withLock { $0.append(name) } }
        }
        XCTAssertEqual(granted.withLock { $0 }, ["a1", "a2", "b1", "b2"], "a3 and a4 wait for host a; b passes them")
        gate.release(host: "b")
        XCTAssertEqual(granted.withLock { $0 }, ["a1", "a2", "b1", "b2"], "a slot of b's does not let a third a in")
        gate.release(host: "a")
        XCTAssertEqual(granted.withLock { $0 }, ["a1", "a2", "b1", "b2", "a3"])
        XCTAssertEqual(gate.waiting, 1)
    }

    func testTheQueueHonoursThePerHostLimitAndOperationPriority() throws {
        let server = try FaultServer.start(port: 0)
        defer { server.stop() }
        let other = try FaultServer.start(port: 0)
        defer { other.stop() }
        let queue = makeQueue(maxConcurrentRequests: 3, maxConcurrentRequestsPerHost: 1, earlyRetry: nil)
        let slow = (1...3).map { _ in queue.add(URLRequest(url: server.url("/delay/300"))) }
        let fast = queue.add(URLRequest(url: other.url("/echo")))
        waitFor(5, "the other host's request to finish") { fast.result != nil }
        XCTAssertEqual(slow.filter { $0.result != nil }.count, 0, "one host's requests go one at a time")
        XCTAssertEqual(slow.filter { $0.phase == .waitingForSlot }.count, 2)
        queue.waitUntilAllOperationsAreFinished()
    }
}
