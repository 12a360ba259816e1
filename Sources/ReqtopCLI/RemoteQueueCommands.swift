import Foundation
import RequestEndpoint
import RequestMonitor

/// The monitor's commands sent to an attached program; each shows the program's answer.
struct RemoteQueueCommands: QueueCommands {
    let client: EndpointClient
    /// Called with the state to show again when a pause or resume did not happen (refused by
    /// a read-only endpoint, or the program is gone): the monitor toggles its mark first.
    var pauseNotApplied: @Sendable (Bool) -> Void = { _ in }

    private func ask(_ command: EndpointProtocol.Command, _ operation: String? = nil) -> (ok: Bool, text: String) {
        guard let answer = client.request(command, operation: operation) else { return (false, "no answer from the program") }
        return (answer.ok, answer.ok || answer.message.hasPrefix("refused") ? answer.message : "refused: \(answer.message)")
    }

    func retry(_ id: String) -> String { ask(.retry, id).text }
    func cancel(_ id: String) -> String { ask(.cancel, id).text }
    func cancelAll() -> String { ask(.cancelAll).text }
    func releaseBatches() -> String { ask(.releaseBatches).text }

    func setSuspended(_ suspended: Bool) -> String {
        let answer = ask(suspended ? .suspend : .resume)
        if !answer.ok { pauseNotApplied(!suspended) }
        return answer.text
    }
}
