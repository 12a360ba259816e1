import Foundation

/// What a headless session does at Ctrl-C, SIGTERM or SIGHUP.
package enum SignalStop: Sendable {
    /// Cancels what runs at once (`reqtop run`: the person wants the run over).
    case cancel
    /// Calls `begin` (a proxy stops taking requests), lets what is in flight end by itself
    /// for up to `within` seconds and then cancels the rest; a second signal cancels at once. A proxy's
    /// client that already has its answer whole must not see it recorded as cancelled.
    case drain(within: TimeInterval, begin: @Sendable () -> Void)

    /// How long what is in flight may go on by itself (0: it is cancelled at once).
    var grace: TimeInterval {
        if case .drain(let within, _) = self { return within }
        return 0
    }

    /// What a draining stop says as it begins: how many may end, within what, and how to
    /// cancel them sooner (`hurry`: the key that does).
    static func stoppingLine(running: Int, grace: TimeInterval, hurry: String) -> String {
        "reqtop: stopping: \(running) request\(running == 1 ? "" : "s") in flight may end within \(String(format: "%g", grace))s; "
            + "\(hurry) cancels \(running == 1 ? "it" : "them") now"
    }

    /// What stops new work, if this stop has such a step.
    var stopsTaking: (@Sendable () -> Void)? {
        if case .drain(_, let begin) = self { return begin }
        return nil
    }
}
