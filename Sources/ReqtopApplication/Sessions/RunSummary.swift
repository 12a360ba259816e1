import Foundation
import RequestOperations

/// The one-line summary on stderr and the exit status of a run.
package struct RunSummary: Equatable {
    package var succeeded = 0
    package var failed = 0
    package var cancelled = 0
    /// Answers other than 2xx passed on as they came (a transparent proxy's): not failures.
    package var relayed = 0
    package var attempts = 0
    package var duration: TimeInterval = 0

    /// Counted by the one rule (``SessionTally``): every operation in the events.
    package init(tally: SessionTally, duration: TimeInterval) {
        succeeded = tally.count(.success)
        failed = tally.count(.failure)
        cancelled = tally.count(.cancelled)
        relayed = tally.count(.relayed)
        attempts = tally.attempts
        self.duration = duration
    }

    package var total: Int { succeeded + relayed + failed + cancelled }

    /// 0 when every operation succeeded, else 1.
    package var exitStatus: Int32 { failed + cancelled == 0 ? 0 : 1 }

    package var line: String {
        let seconds = String(format: "%.1f", duration)
        return "reqtop: \(total) operation\(total == 1 ? "" : "s") in \(seconds)s: \(succeeded) succeeded, "
            + Self.relayedWords(relayed) + "\(failed) failed, "
            + "\(cancelled) cancelled (\(attempts) attempt\(attempts == 1 ? "" : "s"))"
    }

    /// `count` relayed answers in a summary's words, nothing when there are none (a session
    /// that is no transparent proxy's never has one).
    package static func relayedWords(_ count: Int) -> String {
        count > 0 ? "\(count) relayed (answers other than 2xx, passed on), " : ""
    }
}
