import Foundation
import RequestOperations

/// The one-line summary on stderr and the exit status of a run.
struct RunSummary: Equatable {
    var succeeded = 0
    var failed = 0
    var cancelled = 0
    var attempts = 0
    var duration: TimeInterval = 0

    init(results: [RequestResult], duration: TimeInterval) {
        for result in results {
            switch result.outcome {
            case .success: succeeded += 1
            case .failure: failed += 1
            case .cancelled: cancelled += 1
            }
            attempts += result.attempts.filter { $0.startedAt != nil }.count
        }
        self.duration = duration
    }

    var total: Int { succeeded + failed + cancelled }

    /// 0 when every operation succeeded, else 1.
    var exitStatus: Int32 { failed + cancelled == 0 ? 0 : 1 }

    var line: String {
        let seconds = String(format: "%.1f", duration)
        return "reqtop: \(total) operation\(total == 1 ? "" : "s") in \(seconds)s: \(succeeded) succeeded, \(failed) failed, "
            + "\(cancelled) cancelled (\(attempts) attempt\(attempts == 1 ? "" : "s"))"
    }
}
