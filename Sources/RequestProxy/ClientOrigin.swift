import Foundation
import Synchronization

/// A connection's client program, looked up once when the connection opens (where the
/// program's last connections were, on the event loop; anywhere else, off it) and awaited by
/// its first request (or its tunnel's row).
final class ClientOrigin: Sendable {
    typealias Waiter = @Sendable (String?) -> Void
    private enum State {
        case looking([Waiter])
        case found(String?)
    }
    private let state = Mutex(State.looking([]))
    /// Where the program's socket was (once found), told to the lookup when it closes.
    private let place = Mutex<ClientProgram.Place?>(nil)

    /// Starts the lookup of the program holding `socket` (nil: none to look for).
    init(_ socket: ClientProgram.Socket?) {
        guard let socket else {
            state.withLock { $0 = .found(nil) }
            return
        }
        // Most often where a program's last connection was: found here, on the event loop,
        // it costs no thread's wake-up, and the first request never waits for another thread.
        if let (found, place) = ClientProgram.findQuickly(socket) {
            state.withLock { $0 = .found(found) }
            self.place.withLock { $0 = place }
            return
        }
        DispatchQueue.global().async { [self] in
            let (found, place) = ClientProgram.find(socket)
            self.place.withLock { $0 = place }
            let waiting = state.withLock { state -> [Waiter] in
                guard case .looking(let waiting) = state else { return [] }
                state = .found(found)
                return waiting
            }
            waiting.forEach { $0(found) }
        }
    }

    /// The connection closed: the lookup tries its descriptor first next time.
    func connectionClosed() {
        if let place = place.withLock({ $0 }) { ClientProgram.closed(place) }
    }

    /// The program if found by now, without waiting.
    var known: String? {
        state.withLock { state in
            if case .found(let program) = state { return program }
            return nil
        }
    }

    /// Calls `body` with the program once it is found (at once when it is), on the thread
    /// that found it.
    func whenFound(_ body: @escaping Waiter) {
        let now = state.withLock { state -> String?? in
            switch state {
            case .found(let program): return .some(program)
            case .looking(var waiting):
                waiting.append(body)
                state = .looking(waiting)
                return nil
            }
        }
        if let now { body(now) }
    }

    /// The program, once found (nil: not a local program, or not to be known).
    var program: String? {
        get async {
            await withCheckedContinuation { continuation in
                whenFound { continuation.resume(returning: $0) }
            }
        }
    }
}
