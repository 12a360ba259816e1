@testable import RequestProxy
import XCTest

/// ShortMemory: what the program lookup keeps for a moment (sockets seen on the way, names).
final class ShortMemoryTests: XCTestCase {
    private let start = ContinuousClock.now

    func testAValueIsGivenWithinItsLifetimeAndNotAfter() {
        let memory = ShortMemory<Int32, String>(lifetime: .seconds(1), capacity: 8)
        memory.put("curl 42", for: 42, now: start)
        XCTAssertEqual(memory.value(for: 42, now: start + .milliseconds(999)), "curl 42")
        XCTAssertNil(memory.value(for: 42, now: start + .seconds(1)), "a second old: read again")
        XCTAssertNil(memory.value(for: 7, now: start), "never put")
    }

    func testTakingForgets() {
        let memory = ShortMemory<UInt32, Int>(lifetime: .seconds(2), capacity: 8)
        memory.put(3, for: 1001, now: start)
        XCTAssertEqual(memory.value(for: 1001, taking: true, now: start), 3)
        XCTAssertNil(memory.value(for: 1001, now: start), "taken once")
    }

    func testAPutAgainIsNewAgain() {
        let memory = ShortMemory<Int32, String>(lifetime: .seconds(1), capacity: 8)
        memory.put("sh 9", for: 9, now: start)
        memory.put("curl 9", for: 9, now: start + .milliseconds(900))
        XCTAssertEqual(memory.value(for: 9, now: start + .milliseconds(1500)), "curl 9", "the later name, timed from its own put")
    }

    func testFullItStartsAgainRatherThanGrowing() {
        let memory = ShortMemory<Int, Int>(lifetime: .seconds(60), capacity: 4)
        for key in 0..<4 { memory.put(key, for: key, now: start) }
        XCTAssertEqual(memory.value(for: 3, now: start), 3)
        memory.put(4, for: 4, now: start)
        XCTAssertEqual(memory.value(for: 4, now: start), 4)
        XCTAssertEqual((0..<4).compactMap { memory.value(for: $0, now: start) }, [], "emptied when full, then the new one put")
    }
}
