import Foundation
import Synchronization

/// Process signals, delivered reliably: SIGINT, SIGTERM, SIGHUP, SIGWINCH and SIGTSTP are
/// blocked in every thread from the start of `main`, and one thread takes them with `sigwait` and
/// calls whoever registered for them.
///
/// Why not `DispatchSource.makeSignalSource`: on Linux it arms asynchronously (through a
/// signalfd), and a signal that arrives before it is armed, with the disposition already
/// set to ignore, is lost: a `kill -TERM` sent right after `reqtop serve` printed its port
/// was silently dropped and the process never ended.
///
/// With no handler registered a signal keeps its default effect (SIGWINCH is ignored, SIGTSTP
/// stops the process until SIGCONT, the others end it), so blocking them changes nothing for code that does not ask —
/// except while *holding* (``install(holding:)``): then a SIGINT, SIGTERM or SIGHUP that
/// arrives before anyone registered for it waits, and goes to the first handler that
/// registers, so a Ctrl-C in the first moments of a session (while it parses its plan and
/// opens its recording) ends that session cleanly with its summary instead of killing the
/// process. ``stopHolding()`` gives waiting signals their default effect, for commands
/// that will not register.
///
/// SIGTSTP (Ctrl-Z) is here because ncurses' own handler ran on whichever thread the kernel
/// chose, in the middle of the drawing thread's work: most Ctrl-Zs in the monitor did not
/// stop it, and the `fg` typed next went to the monitor as keys. The monitor registers for
/// it and stops from its own loop with ``stopProcess()``.
public enum SignalCenter {
    public static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGTSTP]
    private static let handlers = Mutex<[Int32: [UInt64: @Sendable () -> Void]]>([:])
    private static let nextToken = Mutex<UInt64>(0)
    private static let installed = Mutex(false)
    /// Whether unhandled signals wait for a handler, and the ones waiting.
    private static let held = Mutex<(holding: Bool, pending: [Int32])>((false, []))

    /// Call first thing in `main`, before any other thread is started (threads inherit the
    /// signal mask of the thread that creates them). With `holding`, signals that nobody
    /// handles yet wait for a handler (see the type's comment).
    public static func install(holding: Bool = false) {
        held.withLock { $0.holding = holding }
        let first = installed.withLock { installed -> Bool in
            defer { installed = true }
            return !installed
        }
        guard first else { return }
        var set = signalSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
        let thread = Thread {
            var set = signalSet()
            while true {
                var received: Int32 = 0
                guard sigwait(&set, &received) == 0 else { continue }
                deliver(received)
            }
        }
        thread.name = "reqtop.signals"
        thread.start()
    }

    public static var isInstalled: Bool { installed.withLock { $0 } }

    /// Calls `handler` (on the signal thread) for each `signal` until the returned
    /// registration is cancelled.
    public static func handle(_ signal: Int32, _ handler: @escaping @Sendable () -> Void) -> SignalRegistration {
        let token = nextToken.withLock { token -> UInt64 in
            token += 1
            return token
        }
        // Registering and taking a waiting signal happen under `held`'s lock, as does
        // `deliver`'s look for a handler, so a signal is never parked after its handler came.
        let waiting = held.withLock { held -> Bool in
            handlers.withLock { $0[signal, default: [:]][token] = handler }
            guard let index = held.pending.firstIndex(of: signal) else { return false }
            held.pending.remove(at: index)
            return true
        }
        // Delivered as a signal would be, from another thread, after the registration
        // returns (the registrant may still be setting up).
        if waiting { Thread.detachNewThread { handler() } }
        return SignalRegistration(signal: signal, token: token)
    }

    /// Stops holding: a signal still waiting for a handler has its default effect now.
    public static func stopHolding() {
        let pending = held.withLock { held -> [Int32] in
            held.holding = false
            defer { held.pending = [] }
            return held.pending
        }
        pending.forEach(deliver)
    }

    fileprivate static func remove(_ signal: Int32, _ token: UInt64) {
        handlers.withLock { _ = $0[signal]?.removeValue(forKey: token) }
    }

    private static func deliver(_ signal: Int32) {
        let (registered, kept) = held.withLock { held -> ([@Sendable () -> Void], Bool) in
            let registered = handlers.withLock { Array(($0[signal] ?? [:]).values) }
            guard registered.isEmpty, held.holding, signal != SIGWINCH, signal != SIGTSTP else { return (registered, false) }
            if !held.pending.contains(signal) { held.pending.append(signal) }
            return ([], true)
        }
        guard registered.isEmpty else {
            registered.forEach { $0() }
            return
        }
        guard signal != SIGWINCH, !kept else { return }
        if signal == SIGTSTP {
            stopProcess()
            return
        }
        // Nobody asked: the default effect, which for these signals is to end the process.
        raiseWithDefaultEffect(signal)
    }

    /// Gives `signal` its default effect on this thread: default disposition, unblocked here
    /// for the moment of the raise, blocked again if the process goes on (after a stop).
    private static func raiseWithDefaultEffect(_ signal: Int32) {
        Foundation.signal(signal, SIG_DFL)
        var only = sigset_t()
        sigemptyset(&only)
        sigaddset(&only, signal)
        pthread_sigmask(SIG_UNBLOCK, &only, nil)
        raise(signal)
        pthread_sigmask(SIG_BLOCK, &only, nil)
    }

    /// Stops the process as Ctrl-Z does (the default effect of SIGTSTP) and returns when it is
    /// continued (`fg`). Call it from the thread that owns the terminal, after giving the
    /// terminal back. In a process group without job control (no shell to continue it) the
    /// kernel discards the stop, as it would for any program, and this returns at once.
    public static func stopProcess() {
        // The stop takes every thread; when the process continues, SIGTSTP is blocked again.
        raiseWithDefaultEffect(SIGTSTP)
    }

    private static func signalSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        return set
    }
}

/// A handler registered with ``SignalCenter``; cancel it to stop receiving.
public struct SignalRegistration: Sendable {
    let signal: Int32
    let token: UInt64

    public func cancel() {
        SignalCenter.remove(signal, token)
    }
}
