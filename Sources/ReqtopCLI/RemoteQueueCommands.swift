import Foundation
import RequestEndpoint
import RequestMonitor

/// The monitor's commands sent to an attached program; each shows the program's answer.
struct RemoteQueueCommands: QueueCommands {
    let client: EndpointClient

    private func send(_ command: EndpointProtocol.Command, _ operation: String? = nil) -> String {
        guard let answer = client.request(command, operation: operation) else { return "no answer from the program" }
        return answer.ok ? answer.message : "refused: \(answer.message)".replacingOccurrences(of: "refused: refused: ", with: "refused: ")
    }

    func retry(_ id: String) -> String { send(.retry, id) }
    func cancel(_ id: String) -> String { send(.cancel, id) }
    func cancelAll() -> String { send(.cancelAll) }
    func setSuspended(_ suspended: Bool) -> String { send(suspended ? .suspend : .resume) }
    func releaseBatches() -> String { send(.releaseBatches) }
}
