import Dispatch
import Foundation
import Synchronization

/// The timers of a ``SystemClock``: a heap of deadlines behind one Dispatch timer source,
/// armed for the earliest.
///
/// Why not `asyncAfter` per timer: every operation schedules a deadline (5 minutes by
/// default) and cancels it a few milliseconds later. With `asyncAfter` each schedule wakes
/// Dispatch's manager thread, and a cancelled block stays in Dispatch's heap until its
/// deadline — at 8,000 operations a second that is 2.4 million dead blocks held for five
/// minutes. Here a timer later than the earliest touches nothing but the heap, and
/// cancelled ones are swept out once they are half of it.
final class TimerQueue: Sendable {
    private struct Entry {
        let deadline: TimeInterval
        let sequence: UInt64
        let timer: OneShotTimer

        func isBefore(_ other: Entry) -> Bool {
            (deadline, sequence) < (other.deadline, other.sequence)
        }
    }

    private struct State {
        /// Kept behind the lock with the heap: it is armed only while the heap is held.
        let source: DispatchSourceTimer
        var heap: [Entry] = []
        var sequence: UInt64 = 0
        /// The deadline the source is armed for (`infinity`: not armed).
        var armed = TimeInterval.infinity
        var cancelled = 0

        mutating func push(_ entry: Entry) {
            heap.append(entry)
            var child = heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard heap[child].isBefore(heap[parent]) else { break }
                heap.swapAt(child, parent)
                child = parent
            }
        }

        mutating func popFirst() -> Entry {
            let first = heap[0]
            let last = heap.removeLast()
            if !heap.isEmpty {
                heap[0] = last
                siftDown(0)
            }
            return first
        }

        mutating func siftDown(_ start: Int) {
            var parent = start
            while true {
                let left = 2 * parent + 1, right = left + 1
                var first = parent
                if left < heap.count, heap[left].isBefore(heap[first]) { first = left }
                if right < heap.count, heap[right].isBefore(heap[first]) { first = right }
                guard first != parent else { return }
                heap.swapAt(parent, first)
                parent = first
            }
        }

        /// Drops cancelled timers and rebuilds the heap: O(n), done when they are half of it.
        mutating func sweep() {
            heap.removeAll { $0.timer.isSpent }
            cancelled = 0
            for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
        }
    }

    private let state: Mutex<State>
    private let now: @Sendable () -> TimeInterval

    init(queue: DispatchQueue, now: @escaping @Sendable () -> TimeInterval) {
        self.now = now
        state = Mutex(State(source: DispatchSource.makeTimerSource(queue: queue)))
        state.withLock { state in
            state.source.setEventHandler { [weak self] in self?.fireDue() }
            state.source.activate()
        }
    }

    deinit {
        state.withLock { $0.source.cancel() }
    }

    /// Timers in the heap: pending, or cancelled and not yet swept.
    var heapCount: Int { state.withLock { $0.heap.count } }

    func schedule(at deadline: TimeInterval, _ work: @escaping @Sendable () -> Void) -> ScheduledTimer {
        let timer = OneShotTimer(work, queue: self)
        state.withLock { state in
            state.sequence += 1
            state.push(Entry(deadline: deadline, sequence: state.sequence, timer: timer))
            // Armed under the lock, so an earlier deadline is never overwritten by a later one.
            guard deadline < state.armed else { return }
            state.armed = deadline
            arm(state.source, for: deadline)
        }
        return timer
    }

    func noteCancelled() {
        state.withLock { state in
            state.cancelled += 1
            if state.heap.count > 64, state.cancelled * 2 > state.heap.count { state.sweep() }
        }
    }

    private func arm(_ source: DispatchSourceTimer, for deadline: TimeInterval) {
        // Capped at a year: Dispatch converts the delay to whole nanoseconds, which traps for
        // delays a server can ask for (Retry-After: 9223372036854775807); a timer a year out
        // is as good as never.
        let delay = min(max(0, deadline - now()), 365 * 86_400)
        source.schedule(deadline: .now() + delay, leeway: .milliseconds(1))
    }

    /// Fires every timer due now, in deadline order, then arms the source for the next.
    private func fireDue() {
        while true {
            let due = state.withLock { state -> OneShotTimer? in
                let current = now()
                while let first = state.heap.first, first.timer.isSpent {
                    _ = state.popFirst()
                    state.cancelled = max(0, state.cancelled - 1)
                }
                guard let first = state.heap.first else {
                    state.armed = .infinity
                    return nil
                }
                guard first.deadline <= current else {
                    state.armed = first.deadline
                    arm(state.source, for: first.deadline)
                    return nil
                }
                return state.popFirst().timer
            }
            guard let due else { return }
            due.fire()
        }
    }
}
