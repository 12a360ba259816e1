#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import RequestOperations
import RequestEventFormat

/// The endpoint's commands: one line in, one reply out (see ``EndpointProtocol``). The queue
/// carries them out through ``QueueControl``, as the live monitor's do, and the replies use
/// the same words (`QueueCommandOutcome.message`).
extension MonitorEndpoint {
    /// Carries out one command line from connection `fd` and returns the reply line.
    func answer(_ line: String, from fd: Int32) -> String {
        let request: EndpointProtocol.Request
        do {
            request = try EndpointProtocol.parse(line)
        } catch let error as EndpointError {
            return error.id == nil ? EndpointProtocol.error(error.description)
                : EndpointProtocol.reply(id: error.id, .notCarriedOut(reason: error.description))
        } catch {
            return EndpointProtocol.error("\(error)")
        }
        return EndpointProtocol.reply(id: request.id, carryOut(request.command, from: fd))
    }

    /// The same commands, with the same outcomes, as the live monitor's (``QueueControl``);
    /// faults only where the program opted in, each monitor's its own.
    func carryOut(_ command: QueueCommand, from fd: Int32) -> QueueCommandOutcome {
        if options.readOnly { return .readOnly }
        if command.touchesFaults, !options.acceptsFaults { return .faultsNotAccepted }
        let outcome = control(for: fd).perform(command) { id in
            state.withLock { $0.journal.events[id] } == nil ? .unknownOperation(operation: id) : .alreadyEnded(operation: id)
        }.outcome
        if case .setSuspended(let suspended) = command {
            broadcast(EndpointProtocol.line(["event": "suspended", "value": suspended]))
        }
        if command.touchesFaults { broadcastFaults() }
        return outcome
    }

    /// The queue's control as connection `fd`'s monitor: the faults it sets are its own.
    func control(for fd: Int32) -> QueueControl {
        QueueControl(queue: queue, actor: "monitor", faultOwner: "attached monitor \(fd)")
    }

    /// Takes away the faults connection `fd`'s monitor set: it detached, died or was let go.
    func releaseFaults(of fd: Int32) {
        guard options.acceptsFaults else { return }
        let removed = control(for: fd).removeOwnFaults()
        guard removed > 0 else { return }
        broadcastFaults()
        options.notice("removed \(removed) fault\(removed == 1 ? "" : "s") set by a monitor that detached")
    }

    /// Tells every monitor how many faults are injected now (their header's FAULTS ON).
    func broadcastFaults() {
        broadcast(EndpointProtocol.line(["event": "faults", "count": queue.faults.list.count]))
    }

    func broadcast(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        state.withLock { state in
            for fd in Array(state.connections.keys) { state.connections[fd]?.append(bytes) }
        }
        wake()
    }
}
