import CNCurses
import Foundation

/// Whether the monitor can draw on this terminal, asked before ncurses takes it over:
/// `initscr` on an unknown `TERM` prints "Error opening terminal" and exits the process
/// with status 1 (our "some requests failed"), and on `TERM=dumb` it draws garbage.
public enum TerminalCheck {
    /// Why the monitor cannot run on the terminal `term` names, or `nil` when it can.
    public static func problem(term: String?) -> String? {
        guard let term, !term.isEmpty else { return "TERM is not set, so the terminal's kind is unknown" }
        switch term.withCString({ reqtop_terminal_problem($0) }) {
        case 0: return nil
        case 1: return "TERM=\(term) is a terminal ncurses does not know (no terminfo entry)"
        case 2: return "no terminfo database was found to look TERM=\(term) up"
        default: return "TERM=\(term) cannot move the cursor, which a full-screen monitor needs"
        }
    }
}
