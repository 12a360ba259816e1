import RequestMonitor
import XCTest

/// Strings from servers, recordings and attached programs cannot move the cursor or shift the
/// columns: control characters never reach the terminal.
final class CellGridTests: XCTestCase {
    func testControlCharactersAreShownAsReplacementsNotSentToTheTerminal() {
        var grid = CellGrid(width: 20, height: 1)
        let end = grid.put("a\u{1B}[2Jb\rc\u{7F}d\u{9B}e\tf\r\ng", x: 0, y: 0)
        XCTAssertEqual(grid.line(0), "a\u{FFFD}[2Jb\u{FFFD}c\u{FFFD}d\u{FFFD}e f g    ")
        XCTAssertEqual(end, 16, "one cell a character: nothing shifts")
        var plain = CellGrid(width: 8, height: 1)
        plain.put("é ✓ →", x: 0, y: 0)
        XCTAssertEqual(plain.line(0), "é ✓ →   ")
    }
}
