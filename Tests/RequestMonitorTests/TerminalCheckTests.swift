import RequestMonitor
import XCTest

/// Before: an unknown TERM made ncurses print "Error opening terminal" and exit 1 (our
/// "some requests failed"), and TERM=dumb drew garbage.
final class TerminalCheckTests: XCTestCase {
    func testTerminalsTheMonitorCannotDrawOnAreNamed() {
        XCTAssertEqual(TerminalCheck.problem(term: "xterm-bogus"), "TERM=xterm-bogus is a terminal ncurses does not know (no terminfo entry)")
        XCTAssertEqual(TerminalCheck.problem(term: "dumb"), "TERM=dumb cannot move the cursor, which a full-screen monitor needs")
        XCTAssertEqual(TerminalCheck.problem(term: nil), "TERM is not set, so the terminal's kind is unknown")
        XCTAssertEqual(TerminalCheck.problem(term: ""), "TERM is not set, so the terminal's kind is unknown")
        XCTAssertNil(TerminalCheck.problem(term: "xterm"))
        XCTAssertNil(TerminalCheck.problem(term: "screen-256color"))
    }
}
