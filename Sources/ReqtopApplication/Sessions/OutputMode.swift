import Foundation
import RequestMonitor

/// Whether to open the terminal monitor: only when stdout and stdin are a terminal and
/// `--no-tui` was not given; otherwise the headless JSON-lines output.
package enum OutputMode: Equatable {
    case headless
    case monitor(color: Bool)

    package static func choose(noTUI: Bool, noColor: Bool = false) -> OutputMode {
        guard !noTUI, isatty(STDOUT_FILENO) == 1, isatty(STDIN_FILENO) == 1 else { return .headless }
        // A terminal the monitor cannot draw on: say why, and print what headless would.
        if let problem = TerminalCheck.problem(term: ProcessInfo.processInfo.environment["TERM"]) {
            ErrorOutput.print("reqtop: \(problem); printing events as JSON lines instead (--no-tui says so at once)")
            return .headless
        }
        // https://no-color.org: any non-empty NO_COLOR turns colour off.
        let environmentSaysNo = !(ProcessInfo.processInfo.environment["NO_COLOR"] ?? "").isEmpty
        return .monitor(color: !noColor && !environmentSaysNo)
    }
}
