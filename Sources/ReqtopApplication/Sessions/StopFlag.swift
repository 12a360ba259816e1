import Dispatch
import Synchronization

/// Whether a session was told to stop (`q` in the monitor, a signal headless), and a wait for
/// it: a command with nothing to do until then (`reqtop proxy`) sleeps in ``wait()`` instead of
/// waking ten times a second all day to ask.
package final class StopFlag: Sendable {
    private let raised = Mutex(false)
    /// Signalled once, when raised; each waiter passes the signal on to the next.
    private let told = DispatchSemaphore(value: 0)

    package init() {}

    package var isRaised: Bool { raised.withLock { $0 } }

    /// Raises the flag; true only the first time.
    @discardableResult
    package func raise() -> Bool {
        let first = raised.withLock { raised in
            defer { raised = true }
            return !raised
        }
        if first { told.signal() }
        return first
    }

    /// Returns once the flag is raised (at once if it is).
    package func wait() {
        told.wait()
        told.signal()
    }
}
