import Foundation
import RequestEventFormat
import RequestOperations

/// The endpoint's wire format: JSON lines both ways.
///
/// Program → monitor: a `hello`, a snapshot (`snapshot` with the number of operations, their
/// events in the event-log format, `snapshotEnd`), then each event as it happens. Lines with
/// an `op` field are events; the others are control lines:
/// - `{"event":"hello","version":1,"pid":..,"name":..,"startedAt":..,"t":..,"live":..,"readOnly":..,"acceptsFaults":..,"faults":N}`
///   (`t`: the program's session time when it was written, for countdowns)
/// - `{"event":"snapshot","operations":N}` … `{"event":"snapshotEnd"}`
/// - `{"event":"missed","count":N}`: the monitor fell behind and N events were dropped; a
///   fresh snapshot follows (the monitor starts again from it)
/// - `{"event":"reply","id":N,"ok":true,"message":"cancelled w1-x","outcome":{"cancelled":{"operation":"w1-x"}}}`:
///   the answer to a command; `outcome` is the typed `QueueCommandOutcome` in its `Codable`
///   form (the case's name, then its labelled values), `message` its words for scripts
/// - `{"event":"error","message":..}`: a line the program could not take
/// - `{"event":"suspended","value":true}`: the queue was paused or resumed (by any monitor)
/// - `{"event":"faults","count":N}`: a monitor injected or removed faults; N are set now
///   (the hello says `faults`, the count then, and `acceptsFaults`, whether monitors may)
///
/// Monitor → program: a `QueueCommand` as `{"id":N,"command":"cancel","op":"w1-x"}` (every
/// command and its fields: QueueCommand+Wire.swift).
public enum EndpointProtocol {
    public static let version = 1
    /// The longest command line taken; longer ones are answered with an error and skipped.
    public static let maxCommandLine = 64 * 1024

    /// A command as read from a line.
    public struct Request: Sendable, Equatable {
        public var id: Int?
        public var command: QueueCommand
    }

    static func line(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    static func reply(id: Int?, _ outcome: QueueCommandOutcome) -> String {
        var object: [String: Any] = ["event": "reply", "ok": outcome.ok, "message": outcome.message]
        if let data = try? JSONEncoder().encode(outcome), let typed = try? JSONSerialization.jsonObject(with: data) {
            object["outcome"] = typed
        }
        if let id { object["id"] = id }
        return line(object)
    }

    static func error(_ message: String) -> String {
        line(["event": "error", "message": message])
    }

    /// Reads one command line; throws a message that names what was wrong.
    public static func parse(_ text: String) throws -> Request {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
            throw EndpointError("not a JSON object: expected {\"id\": N, \"command\": \"cancel\", \"op\": \"ID\"}")
        }
        // An id that is not a whole number in range is refused (1e300 came back as Int.min).
        let id = JSONText.integer(object["id"])
        if let raw = object["id"], !(raw is NSNull), id == nil {
            throw EndpointError("\"id\" must be a whole number of at most 15 digits, found \(StrictJSONReader.describe(raw))")
        }
        guard let name = object["command"] as? String else { throw EndpointError("missing \"command\"", id: id) }
        guard let command = CommandName(rawValue: name) else {
            throw EndpointError("unknown command \"\(name)\"; expected one of \(CommandName.allCases.map(\.rawValue).joined(separator: ", "))", id: id)
        }
        let operation = object["op"] as? String
        if command.needsOperation, operation?.isEmpty ?? true {
            throw EndpointError("\(name) needs \"op\", the operation's id", id: id)
        }
        let host = object["host"] as? String
        if command.needsHost, host?.isEmpty ?? true {
            throw EndpointError("\(name) needs \"host\", as host:port", id: id)
        }
        if command.needsHost, let host, let problem = hostProblem(host) {
            throw EndpointError("\(name): \(problem)", id: id)
        }
        var entry: RequestEntry?
        if command == .resend || command == .resolveBreakpoint && object["how"] as? String == "edit" {
            guard let text = object["entry"] as? String else { throw EndpointError("resend needs \"entry\", the edited request as plan-entry JSON text", id: id) }
            do {
                entry = try RequestEntry.parse(text, file: "entry")
            } catch {
                throw EndpointError("resend: \(error)", id: id)
            }
        }
        do {
            return Request(id: id, command: try Self.command(command, operation: operation ?? "", host: host ?? "", entry: entry, object: object))
        } catch let error as EndpointError {
            throw EndpointError(error.description, id: id)
        }
    }
}

extension EndpointProtocol {
    /// Why `text` is no `host:port` as the engine names hosts (`api.example.com:443`,
    /// `127.0.0.1:8080`, `[::1]:8080`); nil when it is one.
    static func hostProblem(_ text: String) -> String? {
        guard text.utf8.count <= 262 else { return "\"host\" is longer than a host name and port can be" }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65535).contains(port) else {
            return "\"host\" must be host:port with a port from 1 to 65535, found \"\(text.prefix(80))\""
        }
        let name = text[..<colon]
        let bracketed = name.hasPrefix("[") && name.hasSuffix("]") && name.count > 2
        let allowed = bracketed ? CharacterSet(charactersIn: "0123456789abcdefABCDEF:.%[]") : CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
        guard !name.isEmpty, name.unicodeScalars.allSatisfy(allowed.contains) else {
            return "\"host\" must be a host name or address and a port, found \"\(String(text.prefix(80)).debugDescription.dropFirst().dropLast())\""
        }
        return nil
    }
}

/// A line the endpoint could not take.
struct EndpointError: Error, CustomStringConvertible {
    var description: String
    var id: Int?
    init(_ description: String, id: Int? = nil) {
        self.description = description
        self.id = id
    }
}
