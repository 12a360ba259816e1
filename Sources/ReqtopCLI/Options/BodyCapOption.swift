import ArgumentParser
import Foundation
import RequestArchive

/// `--body-cap`: how many bytes of each answer's body the events keep. Declared once for the
/// commands that make a queue's events (run, proxy), checked here against what a recording's
/// line can hold.
struct BodyCapOption: ParsableArguments {
    // The next word is the value whatever it looks like: `--body-cap -1` is a wrong number,
    // said as such, not a missing value and a flag `-1`.
    @Option(name: .customLong("body-cap"), parsing: .unconditional, help: ArgumentHelp(
        "Bytes of each answer's body the events, the monitor, recordings and HAR keep (0: none; 65536 by default; for run, a plan's \"bodyCap\" when this is not given).",
        valueName: "bytes"))
    var bodyCap: Int?

    func validate() throws {
        guard let bodyCap else { return }
        if bodyCap < 0 { throw ValidationError("--body-cap \(bodyCap): expected a number of bytes, 0 or more") }
        if bodyCap > EventLogWriter.maxBodyCap {
            throw ValidationError("--body-cap \(bodyCap): at most \(EventLogWriter.maxBodyCap) (32 MiB), what a recording's line can hold and every reader takes")
        }
    }
}
