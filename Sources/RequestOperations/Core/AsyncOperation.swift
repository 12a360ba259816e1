import Foundation
import Synchronization

/// An `Operation` whose work ends later than `main()` returns: a subclass starts its work
/// in ``execute()`` and calls ``finish()`` once, from any thread, when it is done.
///
/// On Linux the queue learns of state changes only through `willChangeValue` /
/// `didChangeValue` for `isExecuting` and `isFinished`; without them it never drains.
/// This class sends them exactly once each, so executing and finished each flip once.
///
/// `@unchecked Sendable`: `Operation` is not `Sendable`; this class's own state is one
/// enum behind a lock. Every subclass must restate `@unchecked Sendable`.
open class AsyncOperation: Operation, @unchecked Sendable {
    private enum Stage {
        case idle
        case executing
        case finished
    }

    private struct State {
        var stage = Stage.idle
        /// Set by the first `finish()`, so a second caller on another thread backs off
        /// before it sends any change notification.
        var finishClaimed = false
        /// Told once the operation has finished (see ``whenFinished(_:)``).
        var finishObservers: [@Sendable () -> Void] = []
    }

    private let state = Mutex(State())

    override open var isAsynchronous: Bool { true }
    override open var isExecuting: Bool { state.withLock { $0.stage == .executing } }
    override open var isFinished: Bool { state.withLock { $0.stage == .finished } }

    override public final func start() {
        let begin = state.withLock { $0.stage == .idle && !$0.finishClaimed }
        guard begin else { return }
        announce("isExecuting", will: true)
        state.withLock { $0.stage = .executing }
        announce("isExecuting", will: false)
        execute()
    }

    override public final func main() {}

    /// Starts the work. Called once, on the queue's thread; do not block it.
    /// A cancelled operation is started too: it must still call ``finish()``.
    open func execute() {
        finish()
    }

    /// Ends the operation. Only the first call counts.
    public final func finish() {
        let wasExecuting = state.withLock { state -> Bool? in
            guard !state.finishClaimed else { return nil }
            state.finishClaimed = true
            return state.stage == .executing
        }
        guard let wasExecuting else { return }
        announce("isFinished", will: true)
        if wasExecuting { announce("isExecuting", will: true) }
        let observers = state.withLock { state in
            state.stage = .finished
            defer { state.finishObservers = [] }
            return state.finishObservers
        }
        if wasExecuting { announce("isExecuting", will: false) }
        announce("isFinished", will: false)
        observers.forEach { $0() }
    }

    /// Calls `observer` once the operation has finished (at once if it has), on the thread
    /// that finished it: for a queue that starts operations itself and waits for them.
    func whenFinished(_ observer: @escaping @Sendable () -> Void) {
        let finished = state.withLock { state -> Bool in
            guard state.stage != .finished else { return true }
            // Two is the usual count (the queue's table of recent operations, and the queue
            // that started it): one array, not a second when the first is full.
            if state.finishObservers.isEmpty { state.finishObservers.reserveCapacity(2) }
            state.finishObservers.append(observer)
            return false
        }
        if finished { observer() }
    }

    /// Sends the change notification the queue listens for. The one place they are sent,
    /// so a test can count them (on Linux `willChangeValue` cannot be overridden).
    func announce(_ key: String, will: Bool) {
        if will {
            willChangeValue(forKey: key)
        } else {
            didChangeValue(forKey: key)
        }
    }
}
