import Foundation

/// One change of an operation's locked state: the attempt machine's input with the record of
/// what happened (the attempts' records, the last answer, the events), as a value that
/// carries everything it needs. ``RequestOperation/transition(_:)`` applies it under the
/// operation's lock and hands back its `Action`: what to do once the lock is let go of.
///
/// A transition changes ``RequestOperation/State`` and appends events to the hub's lists
/// (their delivery is scheduled after the lock);
/// it reads the operation's constants (its id, options, environment) and nothing else. It
/// never calls the transport, a file, the cookie jar or the program's code: those are the
/// action's, performed by the caller after the lock (ARCHITECTURE.md, "lock → input →
/// unlock → effects"). In debug builds ``RequestOperation/assertOutsideTransition()`` checks
/// that at every effect.
protocol OperationTransition: Sendable {
    associatedtype Action
    func apply(to state: inout RequestOperation.State, of operation: RequestOperation) -> Action
}

extension RequestOperation {
    /// The one place the operation's state changes: `step` under the lock.
    @inline(__always)
    func transition<Step: OperationTransition>(_ step: Step) -> Step.Action {
        var deliveries = EventHub.Deliveries()
        let action = state.withLock { state in
            #if DEBUG
            TransitionDepth.enter()
            defer { TransitionDepth.leave() }
            #endif
            let action = step.apply(to: &state, of: self)
            // The events it published are in the hub's lists, in order; waking their
            // subscribers (a Dispatch schedule, a write to an eventfd) waits for the unlock.
            swap(&deliveries, &state.deliveries)
            return action
        }
        deliveries.schedule()
        return action
    }

    /// The one place the operation's state is read without being changed.
    @inline(__always)
    func look<T: Sendable>(_ read: @Sendable (State) -> T) -> T {
        state.withLock { read($0) }
    }

    /// Fails (debug builds) when an effect — the transport, a file, the program's code, a
    /// teardown — is about to run inside a transition, where it would run under the lock.
    @inline(__always)
    func assertOutsideTransition(_ what: StaticString = #function) {
        #if DEBUG
        precondition(TransitionDepth.current == 0, "\(what) ran inside an operation's transition (under its lock)")
        #endif
    }
}

#if DEBUG
/// How many transitions the current thread is inside (debug builds): effects check it is 0.
enum TransitionDepth {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static var current: Int { Int(bitPattern: pthread_getspecific(key)) }

    static func enter() { pthread_setspecific(key, UnsafeRawPointer(bitPattern: current + 1)) }

    static func leave() { pthread_setspecific(key, UnsafeRawPointer(bitPattern: current - 1)) }
}
#endif
