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
    /// Carries out one command line and returns the reply line.
    func answer(_ line: String) -> String {
        let request: EndpointProtocol.Request
        do {
            request = try EndpointProtocol.parse(line)
        } catch let error as EndpointError {
            return error.id == nil ? EndpointProtocol.error(error.description) : EndpointProtocol.reply(id: error.id, ok: false, error.description)
        } catch {
            return EndpointProtocol.error("\(error)")
        }
        if options.readOnly {
            return EndpointProtocol.reply(id: request.id, ok: false, "refused: this endpoint is read-only")
        }
        let (ok, message) = carryOut(request)
        return EndpointProtocol.reply(id: request.id, ok: ok, message)
    }

    /// The same commands, with the same answers, as the live monitor's (``QueueControl``).
    func carryOut(_ request: EndpointProtocol.Request) -> (Bool, String) {
        let control = QueueControl(queue: queue)
        let id = request.operation ?? ""
        func find() -> RequestOperation? { queue.operation(withID: id) }
        func gone() -> QueueCommandOutcome {
            state.withLock { $0.journal.events[id] } == nil ? .unknownOperation(id) : .alreadyEnded(id)
        }
        let outcome: QueueCommandOutcome
        switch request.command {
        case .retry:
            outcome = find().map { control.retry($0).outcome } ?? gone()
        case .cancel:
            outcome = find().map { control.cancel($0).outcome } ?? gone()
        case .cancelAll:
            outcome = control.cancelAll(queue.operations).outcome
        case .suspend, .resume:
            outcome = control.setSuspended(request.command == .suspend).outcome
            broadcast(EndpointProtocol.line(["event": "suspended", "value": request.command == .suspend]))
        case .releaseBatches:
            outcome = control.releaseBatches().outcome
        case .isolate:
            outcome = control.isolate(host: request.host ?? "").outcome
        case .closeCircuit:
            outcome = control.closeCircuit(host: request.host ?? "").outcome
        case .resend:
            guard let entry = request.entry else { return (false, "resend needs an entry") }
            outcome = find().map { control.resend($0, edited: entry.urlRequest, attemptTimeout: entry.timeout, deadline: entry.deadline).outcome } ?? gone()
        }
        return (outcome.ok, outcome.message)
    }

    func broadcast(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        state.withLock { state in
            for fd in Array(state.connections.keys) { state.connections[fd]?.append(bytes) }
        }
        wake()
    }
}
