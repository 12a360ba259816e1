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

    /// A request's time, under a second in milliseconds (a proxy's are mostly a few), within
    /// the DUR column; from a second on as before.
    func testDurationsUnderASecondReadInMilliseconds() {
        let cases: [(TimeInterval, String)] = [
            (0, "<1ms"), (0.0004, "<1ms"), (0.0005, "1ms"), (0.0021, "2ms"), (0.0405, "41ms"), (0.245, "245ms"),
            (0.9994, "999ms"), (0.9995, "1.0s"), (1.25, "1.2s"), (12.34, "12.3s"), (123, "2m03s"), (-0.001, "<1ms"),
        ]
        for (value, text) in cases {
            XCTAssertEqual(Format.duration(value), text, "\(value)")
        }
        var value = 0.0001
        while value < 3600 {
            XCTAssertLessThanOrEqual(Format.duration(value).count, 6, "\(value)")
            value *= 1.37
        }
    }
}
