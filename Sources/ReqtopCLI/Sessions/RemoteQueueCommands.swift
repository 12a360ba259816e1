import Foundation
import RequestEventFormat
import RequestEndpoint
import RequestMonitor
import RequestOperations

/// The monitor's commands sent to an attached program; each answer is the program's own.
/// Runs off the monitor's drawing thread, so waiting for a reply never freezes the screen.
struct RemoteQueueCommands: QueueCommands {
    let client: EndpointClient

    func perform(_ command: MonitorCommand) -> CommandAnswer {
        let wire: EndpointProtocol.Command, operation: String?
        var host: String?
        var entry: RequestEntry?
        switch command {
        case .retry(let id): (wire, operation) = (.retry, id)
        case .cancel(let id): (wire, operation) = (.cancel, id)
        case .cancelAll: (wire, operation) = (.cancelAll, nil)
        case .setSuspended(let suspended): (wire, operation) = (suspended ? .suspend : .resume, nil)
        case .releaseBatches: (wire, operation) = (.releaseBatches, nil)
        case .isolateHost(let name): (wire, operation, host) = (.isolate, nil, name)
        case .closeCircuit(let name): (wire, operation, host) = (.closeCircuit, nil, name)
        case .resend(let id, let edited): (wire, operation, entry) = (.resend, id, edited)
        case .playback: return Self.noPlayback
        case .toggleFault, .clearFaults:
            // Not sent: no program takes faults from an attached monitor yet (a monitor that
            // died would leave them behind).
            return CommandAnswer(ok: false, QueueCommandOutcome.faultsNotAccepted.message)
        }
        guard let answer = client.request(wire, operation: operation, host: host, entry: entry) else { return CommandAnswer(ok: false, "no answer from the program") }
        let text = answer.ok || answer.message.hasPrefix("refused") ? answer.message : "refused: \(answer.message)"
        return CommandAnswer(ok: answer.ok, text)
    }
}
