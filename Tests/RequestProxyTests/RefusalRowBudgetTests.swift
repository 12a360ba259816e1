@testable import RequestProxy
import XCTest

/// A flood of refused requests is counted, not shown a row each: the first of a second are
/// rows, and the next row after the flood says how many it stands for.
final class RefusalRowBudgetTests: XCTestCase {
    func testPastItsRateRefusalsAreCountedAndTheNextRowSaysHowMany() {
        var budget = RefusalRowBudget(perSecond: 3)
        let second: UInt64 = 1_000_000_000
        let start: UInt64 = 5 * second
        XCTAssertEqual((0..<5).map { budget.take(at: start + UInt64($0)) }, [0, 0, 0, nil, nil])
        XCTAssertNil(budget.take(at: start + second - 1), "still the same second")
        XCTAssertEqual(budget.take(at: start + second), 3, "a new second: its first row tells the three left out")
        XCTAssertEqual(budget.take(at: start + second + 1), 0, "told once")
        XCTAssertEqual(RefusalRowBudget(perSecond: 0).perSecond, 1)
    }
}
