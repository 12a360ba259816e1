import Dispatch
import Foundation
import Synchronization

/// The request operations a ``RequestQueue`` started itself (on its transport's
/// ``OperationStarter``) rather than through its `OperationQueue`, until they finish:
/// what the queue lists, cancels and waits for besides its `OperationQueue`'s.
final class SelfStartedOperations: Sendable {
    private struct State {
        /// In the order they were started.
        var running: [ObjectIdentifier: (order: UInt64, operation: RequestOperation)] = [:]
        var next: UInt64 = 0
    }

    private let state = Mutex(State())
    /// Entered for each operation started, left when it finishes.
    private let unfinished = DispatchGroup()

    /// Those not finished yet, oldest first.
    var running: [RequestOperation] {
        state.withLock { $0.running.values.sorted { $0.order < $1.order }.map(\.operation) }
    }

    var isEmpty: Bool { state.withLock { $0.running.isEmpty } }

    /// Starts `operation` on `starter` and keeps it until it finishes.
    func start(_ operation: RequestOperation, on starter: OperationStarter) {
        unfinished.enter()
        state.withLock { state in
            state.running[ObjectIdentifier(operation)] = (state.next, operation)
            state.next += 1
        }
        operation.whenFinished { [weak self, unfinished] in
            self?.state.withLock { _ = $0.running.removeValue(forKey: ObjectIdentifier(operation)) }
            unfinished.leave()
        }
        starter { operation.start() }
    }

    func waitUntilAllAreFinished() {
        unfinished.wait()
    }
}
