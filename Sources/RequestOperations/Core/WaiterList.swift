/// Tasks waiting for a value, each resumed exactly once: by the owner, or at once with the
/// owner's "cancelled" value when the waiting task is cancelled.
///
/// Kept inside the owner's locked state, so that adding a waiter and deciding whether it
/// must wait at all happen in one critical section. ``RequestBatch`` and ``RequestReactor``
/// wait this way; `Tag` is what the owner needs to know of each waiter (the run it waits for).
struct WaiterList<Value: Sendable, Tag: Sendable> {
    typealias Continuation = CheckedContinuation<Value, Never>

    private(set) var waiting: [(id: UInt64, tag: Tag, continuation: Continuation)] = []
    /// Cancelled before their continuation was added.
    private var withdrawn: Set<UInt64> = []
    private var nextID: UInt64 = 0

    var count: Int { waiting.count }

    mutating func makeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    /// Adds a waiter; false when its task was cancelled first (then resume it at once).
    mutating func add(_ id: UInt64, tag: Tag, _ continuation: Continuation) -> Bool {
        if withdrawn.remove(id) != nil { return false }
        waiting.append((id, tag, continuation))
        return true
    }

    /// Takes out the waiter of a cancelled task, or notes the cancellation for ``add``.
    mutating func withdraw(_ id: UInt64) -> Continuation? {
        guard let index = waiting.firstIndex(where: { $0.id == id }) else {
            withdrawn.insert(id)
            return nil
        }
        return waiting.remove(at: index).continuation
    }

    /// Takes out every waiter whose tag matches.
    mutating func removeAll(where matches: (Tag) -> Bool) -> [Continuation] {
        let taken = waiting.filter { matches($0.tag) }.map(\.continuation)
        waiting.removeAll { matches($0.tag) }
        return taken
    }

    /// Waits as waiter `id`: `enqueue` runs with the continuation (it adds it under the
    /// owner's lock, or resumes it at once); `withdraw` runs if the task is cancelled and
    /// returns the continuation to resume with `cancelled`, when it was still waiting.
    static func wait(cancelled: Value, enqueue: (Continuation) -> Void,
                     withdraw: @Sendable () -> Continuation?) async -> Value {
        await withTaskCancellationHandler {
            await withCheckedContinuation { enqueue($0) }
        } onCancel: {
            withdraw()?.resume(returning: cancelled)
        }
    }
}
