import Foundation
import RequestEventFormat
import RequestOperations

/// A ``QueueCommand`` as a line of the endpoint's protocol, both ways: the monitor writes
/// it with ``EndpointProtocol/line(for:id:)`` and the program reads it back with
/// ``EndpointProtocol/parse(_:)``, so the command arrives as it was given.
///
/// `{"id":N,"command":NAME, …}` where NAME and its fields are:
///
/// | command | fields |
/// |---|---|
/// | `retry`, `cancel` | `op`: the operation's id |
/// | `resend` | `op`, and `entry`: the edited request as plan-entry JSON text |
/// | `cancelAll`, `suspend`, `resume`, `releaseBatches`, `clearFaults` | none |
/// | `isolate`, `closeCircuit`, `toggleFault` | `host`: `host:port` |
extension EndpointProtocol {
    /// The command names on the wire.
    public enum CommandName: String, Sendable, CaseIterable {
        case retry, cancel, cancelAll, suspend, resume, releaseBatches, isolate, closeCircuit, resend, toggleFault, clearFaults

        public init(_ command: QueueCommand) {
            self = switch command {
            case .retry: .retry
            case .cancel: .cancel
            case .cancelAll: .cancelAll
            case .setSuspended(let suspended): suspended ? .suspend : .resume
            case .releaseBatches: .releaseBatches
            case .isolate: .isolate
            case .closeCircuit: .closeCircuit
            case .resend: .resend
            case .toggleFault: .toggleFault
            case .clearFaults: .clearFaults
            }
        }

        var needsOperation: Bool { self == .retry || self == .cancel || self == .resend }
        var needsHost: Bool { self == .isolate || self == .closeCircuit || self == .toggleFault }
    }

    /// `command` as a wire line with request number `id`.
    public static func line(for command: QueueCommand, id: Int) -> String {
        var object: [String: Any] = ["id": id, "command": CommandName(command).rawValue]
        switch command {
        case .retry(let operation), .cancel(let operation): object["op"] = operation
        case .resend(let operation, let edited):
            object["op"] = operation
            object["entry"] = RequestEntry(edited: edited, id: operation).json
        case .isolate(let host), .closeCircuit(let host), .toggleFault(let host): object["host"] = host
        case .cancelAll, .setSuspended, .releaseBatches, .clearFaults: break
        }
        return line(object)
    }

    /// The command named `name` with the line's fields, already checked for presence.
    static func command(_ name: CommandName, operation: String, host: String, entry: RequestEntry?) -> QueueCommand {
        switch name {
        case .retry: .retry(operation: operation)
        case .cancel: .cancel(operation: operation)
        case .resend: .resend(operation: operation, edited: entry!.edited)
        case .cancelAll: .cancelAll
        case .suspend: .setSuspended(true)
        case .resume: .setSuspended(false)
        case .releaseBatches: .releaseBatches
        case .clearFaults: .clearFaults
        case .isolate: .isolate(host: host)
        case .closeCircuit: .closeCircuit(host: host)
        case .toggleFault: .toggleFault(host: host)
        }
    }
}
