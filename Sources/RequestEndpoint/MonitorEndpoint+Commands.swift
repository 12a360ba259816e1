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
        let peer = self.peer(of: fd)
        if options.readOnly { return .readOnly }
        guard accepts(commandsFrom: peer) else {
            return .notCarriedOut(reason: "this program takes no commands from a remote monitor (it was started without --accept-commands)")
        }
        if command.touchesFaults, !options.acceptsFaults { return .faultsNotAccepted }
        let outcome = control(for: fd).perform(command) { id in
            state.withLock { $0.journal.events[id] } == nil ? .unknownOperation(operation: id) : .alreadyEnded(operation: id)
        }.outcome
        if case .remote(let subject, let address) = peer {
            // The program's log says who did what from where.
            options.notice("remote monitor \(subject) (\(address)): \(EndpointProtocol.CommandName(command).rawValue)\(command.operation.map { " " + $0 } ?? "") → \(outcome.message)")
        }
        if case .setSuspended(let suspended) = command {
            broadcast(EndpointProtocol.line(["event": "suspended", "value": suspended]))
        }
        if command.touchesFaults { broadcastFaults() }
        return outcome
    }

    /// The queue's control as connection `fd`'s monitor: the faults it sets are its own. A
    /// remote monitor is named by its certificate's subject in the `by` of what it does.
    func control(for fd: Int32, peer: EndpointPeer? = nil) -> QueueControl {
        switch peer ?? self.peer(of: fd) {
        case .local: QueueControl(queue: queue, actor: "monitor", faultOwner: "attached monitor \(fd)")
        case .remote(let subject, _): QueueControl(queue: queue, actor: "monitor \(subject)", faultOwner: "remote monitor \(subject) #\(fd)")
        }
    }

    func peer(of fd: Int32) -> EndpointPeer {
        state.withLock { $0.connections[fd]?.peer } ?? .local
    }

    /// Whether `peer` may send commands at all: never on a read-only endpoint; a remote one
    /// only where the program said so (``EndpointTLS/acceptsCommands``).
    func accepts(commandsFrom peer: EndpointPeer) -> Bool {
        guard !options.readOnly else { return false }
        switch peer {
        case .local: return true
        case .remote: return options.tls?.acceptsCommands ?? false
        }
    }

    /// Takes away the faults connection `fd`'s monitor set: it detached, died or was let go.
    func releaseFaults(of fd: Int32, peer: EndpointPeer) {
        guard options.acceptsFaults else { return }
        let removed = control(for: fd, peer: peer).removeOwnFaults()
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
