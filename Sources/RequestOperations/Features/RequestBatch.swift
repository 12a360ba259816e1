import Foundation
import Synchronization

/// Holds requests and releases them together: when `size` of them wait, when `timeLimit`
/// has passed since the first one began to wait, or when ``release()`` is called by hand.
///
/// Used through ``BatchingInterceptor`` or any interceptor that answers
/// ``InterceptorCommand/hold(_:)``. A held request holds no concurrency slot. Operations
/// publish `held` (`batch`) when they begin to wait and `released` (`batch`, `size`) when
/// they go on.
public final class RequestBatch: Sendable {
    public let name: String
    /// Requests released together (at least 1).
    public let size: Int
    /// Seconds from the first held request until the batch is released anyway; `nil`: no limit.
    public let timeLimit: TimeInterval?

    private struct State {
        var waiters = WaiterList<Int, Void>()
        /// Bumped on each release, so a time limit set for an earlier group does nothing.
        var generation: UInt64 = 0
        var timer: ScheduledTimer?
        var released = 0
    }

    private let state = Mutex(State())

    public init(name: String, size: Int, timeLimit: TimeInterval? = nil) {
        precondition(size >= 1, "a batch releases at least one request")
        self.name = name
        self.size = size
        self.timeLimit = timeLimit
    }

    /// Requests waiting now.
    public var heldCount: Int { state.withLock { $0.waiters.count } }

    /// Requests released so far, in all.
    public var releasedCount: Int { state.withLock { $0.released } }

    /// Waits until the batch is released; returns how many requests were released together
    /// (0 when the waiting task was cancelled).
    public func hold(clock: RequestClock) async -> Int {
        let id = state.withLock { $0.waiters.makeID() }
        return await WaiterList<Int, Void>.wait(cancelled: 0, enqueue: { continuation in
            let (releasing, startTimer, generation) = state.withLock { state -> ([CheckedContinuation<Int, Never>], Bool, UInt64) in
                guard state.waiters.add(id, tag: (), continuation) else {
                    continuation.resume(returning: 0)
                    return ([], false, 0)
                }
                if state.waiters.count >= size {
                    return (releaseLocked(&state), false, 0)
                }
                return ([], state.waiters.count == 1 && timeLimit != nil, state.generation)
            }
            resume(releasing)
            if startTimer, let timeLimit {
                let timer = clock.schedule(at: clock.now() + timeLimit) { [weak self] in self?.timeLimitPassed(generation) }
                let stale = state.withLock { state -> Bool in
                    guard state.generation == generation else { return true }
                    state.timer = timer
                    return false
                }
                if stale { timer.cancel() }
            }
        }, withdraw: { [self] in state.withLock { $0.waiters.withdraw(id) } })
    }

    /// Releases every waiting request now; returns how many.
    @discardableResult
    public func release() -> Int {
        let releasing = state.withLock { releaseLocked(&$0) }
        resume(releasing)
        return releasing.count
    }

    private func timeLimitPassed(_ generation: UInt64) {
        let releasing = state.withLock { state -> [CheckedContinuation<Int, Never>] in
            guard state.generation == generation else { return [] }
            return releaseLocked(&state)
        }
        resume(releasing)
    }

    private func releaseLocked(_ state: inout State) -> [CheckedContinuation<Int, Never>] {
        let releasing = state.waiters.removeAll { _ in true }
        state.generation += 1
        state.released += releasing.count
        state.timer?.cancel()
        state.timer = nil
        return releasing
    }

    private func resume(_ continuations: [CheckedContinuation<Int, Never>]) {
        for continuation in continuations {
            continuation.resume(returning: continuations.count)
        }
    }
}

extension RequestQueue {
    /// Releases every batch that holds a request of this queue's running operations now.
    /// Returns the batches that let requests go, by name; empty when none held any.
    @discardableResult
    public func releaseHeldBatches() -> [ReleasedBatch] {
        var batches: [ObjectIdentifier: RequestBatch] = [:]
        for operation in operations where operation.result == nil {
            for case let interceptor as BatchingInterceptor in operation.options.interceptors {
                batches[ObjectIdentifier(interceptor.batch)] = interceptor.batch
            }
        }
        return batches.values.sorted { $0.name < $1.name }.compactMap { batch -> ReleasedBatch? in
            let count = batch.release()
            return count > 0 ? ReleasedBatch(name: batch.name, count: count) : nil
        }
    }
}
