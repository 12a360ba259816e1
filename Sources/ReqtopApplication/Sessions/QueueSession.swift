import RequestEventFormat
import RequestOperations

/// What a command that runs a queue shows while it runs: the live monitor on the terminal, or
/// events as JSON lines on stdout with a summary on stderr, as the output mode says. The one
/// place a command's session is assembled (`demo`, `run`, `replay --send`, `proxy`).
package enum QueueSession: Sendable {
    case monitor(MonitorSession)
    case headless(HeadlessSession)

    /// - Parameters:
    ///   - source: the monitor's header (what runs, and how).
    ///   - onSignal: what a headless session does at a signal, and the monitor at `q`: a
    ///     drain stops taking requests and lets those in flight end for its grace (Ctrl-C
    ///     cancels them sooner); otherwise what runs is cancelled at once.
    package static func open(_ queue: RequestQueue, mode: OutputMode, source: String, redactor: Redactor?,
                             onSignal: SignalStop = .cancel) throws -> QueueSession {
        switch mode {
        case .monitor(let color): .monitor(try MonitorSession(queue: queue, source: source, color: color, redactor: redactor,
                                                              onQuit: onSignal))
        case .headless: .headless(HeadlessSession(queue: queue, redactor: redactor, onSignal: onSignal))
        }
    }

    package var isMonitor: Bool {
        if case .monitor = self { return true }
        return false
    }

    /// The person quit the monitor, or a signal stopped the headless run: add nothing more.
    package var isStopping: Bool {
        switch self {
        case .monitor(let session): session.hasQuit
        case .headless(let session): session.wasInterrupted
        }
    }

    /// Returns when the session begins to stop (``isStopping``): for a `body` with nothing to
    /// add, which serves until then.
    package func waitUntilStopping() {
        switch self {
        case .monitor(let session): session.waitUntilQuit()
        case .headless(let session): session.waitUntilInterrupted()
        }
    }

    /// Counts `operation` in the summary, and cancels it with the rest when the session stops.
    package func track(_ operation: RequestOperation) {
        switch self {
        case .monitor(let session): session.track(operation)
        case .headless(let session): session.track(operation)
        }
    }

    /// Runs `body`, which adds operations (and may go on until ``isStopping``): with the monitor,
    /// on a thread of its own while the screen shows until `q`; headless, here, and then waits
    /// for every operation. The summary of what ran.
    package func run(_ body: @escaping @Sendable () -> Void) -> RunSummary {
        switch self {
        case .monitor(let session): session.run(body)
        case .headless(let session): session.run(body)
        }
    }
}
