import Foundation
import RequestEventFormat
import RequestEndpoint
import RequestMonitor
import RequestOperations

/// The monitor's commands sent to an attached program; each answer is the program's own.
/// Runs off the monitor's drawing thread, so waiting for a reply never freezes the screen.
package struct RemoteQueueCommands: QueueCommands {
    package let connection: ConnectionBox
    /// The program said so in its hello: it refuses every command from this monitor.
    package var readOnly = false

    package func perform(_ command: MonitorCommand) -> CommandAnswer {
        guard case .queue(let command) = command else { return Self.noPlayback }
        let outcome = connection.client.request(command)
        return CommandAnswer(ok: outcome.ok, outcome.message)
    }
}
