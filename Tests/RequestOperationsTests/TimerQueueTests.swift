import Dispatch
import Foundation
@testable import RequestOperations
import Synchronization
import XCTest

private func uptime() -> TimeInterval { TimeInterval(DispatchTime.now().uptimeNanoseconds) / 1e9 }

/// The system clock's timers (one Dispatch source over a heap), in real time with wide bounds.
final class TimerQueueTests: XCTestCase {
    private func makeTimers() -> TimerQueue {
        TimerQueue(queue: DispatchQueue(label: "test.timers"), now: { TimeInterval(DispatchTime.now().uptimeNanoseconds) / 1e9 })
    }

    private func now() -> TimeInterval { uptime() }

    func testTimersFireInDeadlineOrderWhateverTheOrderTheyWereScheduledIn() {
        let timers = makeTimers()
        let fired = Mutex<[Int]>([])
        let done = expectation(description: "all fired")
        done.expectedFulfillmentCount = 4
        let start = now()
        for (label, delay) in [(3, 0.15), (1, 0.05), (2, 0.10), (4, 0.20)] {
            _ = timers.schedule(at: start + delay) {
                fired.withLock { $0.append(label) }
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 5)
        XCTAssertEqual(fired.withLock { $0 }, [1, 2, 3, 4])
    }

    func testAnEarlierTimerScheduledAfterALaterOneIsNotHeldBackByIt() {
        let timers = makeTimers()
        let late = timers.schedule(at: now() + 60) { XCTFail("a minute has not passed") }
        let soon = expectation(description: "the earlier one fired")
        let start = now()
        _ = timers.schedule(at: start + 0.05) { soon.fulfill() }
        wait(for: [soon], timeout: 5)
        XCTAssertLessThan(now() - start, 2)
        late.cancel()
    }

    func testACancelledTimerNeverRunsAndCancelledOnesAreSweptOut() {
        let timers = makeTimers()
        let ran = Mutex(0)
        // What every operation does: a five-minute deadline, cancelled when it ends.
        for _ in 0..<10_000 {
            timers.schedule(at: now() + 300) { ran.withLock { $0 += 1 } }.cancel()
        }
        XCTAssertLessThan(timers.heapCount, 200, "10,000 cancelled deadlines are not held for five minutes")
        let cancelledSoon = timers.schedule(at: now() + 0.02) { ran.withLock { $0 += 1 } }
        cancelledSoon.cancel()
        let after = expectation(description: "a later timer fired")
        _ = timers.schedule(at: now() + 0.1) { after.fulfill() }
        wait(for: [after], timeout: 5)
        XCTAssertEqual(ran.withLock { $0 }, 0)
    }

    func testWorkThatSchedulesATimerAndDelaysFromServersThatCannotBeRepresentedAreSafe() {
        let timers = makeTimers()
        let second = expectation(description: "the timer scheduled by a timer fired")
        _ = timers.schedule(at: now() + 0.02) {
            _ = timers.schedule(at: uptime() + 0.02) { second.fulfill() }
        }
        // Retry-After: 9223372036854775807 (a server's word): armed a year out, no trap.
        let never = timers.schedule(at: now() + 9.2e18) { XCTFail("not in this test's lifetime") }
        wait(for: [second], timeout: 5)
        never.cancel()
    }
}
