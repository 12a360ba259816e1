import Foundation
import RequestEndpoint
import RequestEventFormat
import RequestMonitor
import RequestOperations
import Synchronization

/// The merged monitor's commands: one about an operation or breakpoint goes to the program
/// that owns it; one about the whole queue, a host or a match goes to every program still
/// attached, and each program's endpoint decides for itself (read-only, `--accept-faults`).
/// Each answer names the program it came from.
package struct MergedQueueCommands: QueueCommands {
    package let programs: AttachedPrograms

    package func perform(_ command: MonitorCommand) -> CommandAnswer {
        guard case .queue(let command) = command else { return Self.noPlayback }
        let (route, clients) = programs.route(command)
        switch route {
        case .none(let reason):
            return CommandAnswer(ok: false, reason)
        case .one(let pid, let local):
            guard let client = clients[pid] else { return CommandAnswer(ok: false, "pid \(pid) has ended") }
            return answer([(pid, client.request(local))])
        case .every(let command):
            // Asked at once, so one slow program does not hold up the others' answers.
            let targets = clients.sorted { $0.key < $1.key }
            let outcomes = Mutex<[(Int32, QueueCommandOutcome)]>([])
            DispatchQueue.concurrentPerform(iterations: targets.count) { index in
                let outcome = targets[index].value.request(command)
                outcomes.withLock { $0.append((targets[index].key, outcome)) }
            }
            return answer(outcomes.withLock { $0 }.sorted { $0.0 < $1.0 })
        }
    }

    /// One line for the answers: each program's, or one when they all said the same.
    private func answer(_ outcomes: [(pid: Int32, outcome: QueueCommandOutcome)]) -> CommandAnswer {
        let named = programs.named(outcomes)
        let ok = !named.isEmpty && named.allSatisfy(\.outcome.ok)
        let messages = named.map(\.outcome.message)
        if named.count > 1, Set(messages).count == 1 {
            return CommandAnswer(ok: ok, "\(messages[0]) (in all \(named.count) programs)")
        }
        return CommandAnswer(ok: ok, named.map { "\($0.label): \($0.outcome.message)" }.joined(separator: "; "))
    }
    package init(programs: AttachedPrograms) {
        self.programs = programs
    }
}
