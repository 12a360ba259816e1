import Foundation
import RequestEventFormat
import RequestOperations

/// A `QueueCommand` as a line of the endpoint's protocol, both ways: the monitor writes
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
/// | `addBreakpoint` | `match`: the filter-language match (empty: every request) |
/// | `clearBreakpoints` | none |
/// | `setBreakpointEnabled` | `breakpoint`: its number, `enabled`: true or false |
/// | `removeBreakpoint` | `breakpoint`: its number |
/// | `resolveBreakpoint` | `op`, and `how`: `proceed`, `cancel`, `fail` (with `code`, a URLError code), `respond` (with `status`, `headers`, `body` as text), or `edit` (with `entry`) |
extension EndpointProtocol {
    /// The command names on the wire.
    public enum CommandName: String, Sendable, CaseIterable {
        case retry, cancel, cancelAll, suspend, resume, releaseBatches, isolate, closeCircuit, resend, toggleFault, clearFaults
        case addBreakpoint, clearBreakpoints, resolveBreakpoint, setBreakpointEnabled, removeBreakpoint

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
            case .addBreakpoint: .addBreakpoint
            case .clearBreakpoints: .clearBreakpoints
            case .resolveBreakpoint: .resolveBreakpoint
            case .setBreakpointEnabled: .setBreakpointEnabled
            case .removeBreakpoint: .removeBreakpoint
            }
        }

        var needsOperation: Bool { self == .retry || self == .cancel || self == .resend || self == .resolveBreakpoint }
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
        case .addBreakpoint(let match): object["match"] = match
        case .resolveBreakpoint(let operation, let resolution):
            object["op"] = operation
            switch resolution {
            case .proceed: object["how"] = "proceed"
            case .cancel: object["how"] = "cancel"
            case .fail(let code): (object["how"], object["code"]) = ("fail", code.rawValue)
            case .respond(let status, let headers, let body):
                (object["how"], object["status"], object["headers"]) = ("respond", status, headers)
                object["body"] = String(decoding: body, as: UTF8.self)
            case .edit(let edited):
                (object["how"], object["entry"]) = ("edit", RequestEntry(edited: edited, id: operation).json)
            }
        case .setBreakpointEnabled(let id, let enabled): (object["breakpoint"], object["enabled"]) = (id, enabled)
        case .removeBreakpoint(let id): object["breakpoint"] = id
        case .cancelAll, .setSuspended, .releaseBatches, .clearFaults, .clearBreakpoints: break
        }
        return line(object)
    }

    /// The command named `name` with the line's fields, already checked for presence.
    static func command(_ name: CommandName, operation: String, host: String, entry: RequestEntry?, object: [String: Any]) throws -> QueueCommand {
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
        case .addBreakpoint: .addBreakpoint(match: object["match"] as? String ?? "")
        case .clearBreakpoints: .clearBreakpoints
        case .resolveBreakpoint: .resolveBreakpoint(operation: operation, resolution: try resolution(object, entry: entry))
        case .setBreakpointEnabled: .setBreakpointEnabled(id: try breakpointNumber(object), enabled: object["enabled"] as? Bool ?? true)
        case .removeBreakpoint: .removeBreakpoint(id: try breakpointNumber(object))
        }
    }

    private static func breakpointNumber(_ object: [String: Any]) throws -> Int {
        guard let id = JSONText.integer(object["breakpoint"]) else { throw EndpointError("needs \"breakpoint\", the breakpoint's number") }
        return id
    }

    /// How a `resolveBreakpoint` line says to go on.
    private static func resolution(_ object: [String: Any], entry: RequestEntry?) throws -> BreakpointResolution {
        switch object["how"] as? String {
        case "proceed": return .proceed
        case "cancel": return .cancel
        case "fail":
            guard let code = JSONText.integer(object["code"]) else { throw EndpointError("resolveBreakpoint: \"fail\" needs \"code\", a URLError code such as -1005") }
            return .fail(URLError.Code(rawValue: code) ?? .unknown)
        case "respond":
            guard let status = JSONText.integer(object["status"]), (100...599).contains(status) else {
                throw EndpointError("resolveBreakpoint: \"respond\" needs \"status\" from 100 to 599")
            }
            let headers = (object["headers"] as? [String: Any] ?? [:]).compactMapValues { $0 as? String }
            return .respond(status: status, headers: headers, body: Data((object["body"] as? String ?? "").utf8))
        case "edit":
            guard let entry else { throw EndpointError("resolveBreakpoint: \"edit\" needs \"entry\", the edited request as plan-entry JSON text") }
            return .edit(entry.edited)
        default:
            throw EndpointError("resolveBreakpoint needs \"how\": proceed, cancel, fail, respond or edit")
        }
    }
}
