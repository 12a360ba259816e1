@testable import RequestMonitor
import XCTest

/// Sizes as the table shows them: within the SIZE column, never cut.
final class FormatTests: XCTestCase {
    func testSizesFitTheColumnAndSayTheirUnit() {
        let cases: [(Int, String)] = [
            (0, "0B"), (999, "999B"), (1000, "1.0K"), (12_595, "12.3K"), (655_360, "640K"),
            (4 << 20, "4.0M"), (200 << 20, "200M"), (1000 << 20, "1.0G"),
            (4 << 30, "4.0G"), (100 << 30, "100G"), (3 << 40, "3.0T"), (Int.max, "8388608T"),
        ]
        for (value, text) in cases {
            XCTAssertEqual(Format.bytes(value), text, "\(value)")
        }
        // Every size up to a petabyte fits the 6-wide column (4 GiB was shown as `096.0M`).
        var value = 1
        while value < 1 << 50 {
            XCTAssertLessThanOrEqual(Format.bytes(value).count, 6, "\(value)")
            XCTAssertLessThanOrEqual(Format.bytes(value * 3 / 2 + 7).count, 6, "\(value * 3 / 2 + 7)")
            value *= 2
        }
    }
}
