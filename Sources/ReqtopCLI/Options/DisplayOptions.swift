import ArgumentParser
import ReqtopApplication

/// `--no-tui` and `--no-color`: whether a command opens the monitor or prints JSON lines, and
/// in colour or not. Declared once for every command that shows a queue (demo, run, attach,
/// proxy, replay).
struct DisplayOptions: ParsableArguments {
    @Flag(name: .customLong("no-tui"), help: "Print events as JSON lines instead of opening the monitor.")
    var noTUI = false

    @Flag(name: .customLong("no-color"), help: "A monochrome monitor (so does a non-empty NO_COLOR).")
    var noColor = false

    /// The monitor when asked for and both ends are a terminal; JSON lines otherwise.
    var mode: OutputMode { OutputMode.choose(noTUI: noTUI, noColor: noColor) }
}
