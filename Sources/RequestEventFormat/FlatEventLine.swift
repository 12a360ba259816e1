import Foundation
import RequestOperations

/// The fast way to read an event line: ``FlatJSONObject`` and a field reader over it that
/// gives exactly what ``JSONObjectFields`` gives over `JSONSerialization`'s object — or
/// declines, and ``EventLog/parse(lineData:lineNumber:)`` reads the line the slow way (which
/// also words every error). Declining is always safe; reading differently never is.
enum FlatEventLine {
    enum Outcome {
        case event(RequestEvent)
        case header
        case declined
    }

    static func read(_ line: Data) -> Outcome {
        line.withUnsafeBytes { bytes in
            guard let object = FlatJSONObject.parse(bytes) else { return .declined }
            let fields = FlatObjectFields(object: object, declined: Declined())
            do {
                let name = try fields.string("event")
                if name == "session" { return .header }
                let payload = try RequestEvent.Payload(name: name, fields: fields)
                let event = RequestEvent(time: try fields.double("t"), operationID: try fields.string("op"), attempt: try fields.int("attempt"),
                                         payload: payload, program: fields.optionalString("program"))
                return fields.declined.value ? .declined : .event(event)
            } catch {
                return .declined
            }
        }
    }
}

/// Set when a non-throwing read met something it cannot answer exactly.
final class Declined {
    var value = false
}

private struct Decline: Error {}

/// ``JSONObjectFields``' answers over a ``FlatJSONObject``: the same values for the same
/// text; wherever the two could differ (an error's wording, a number with a fraction read as
/// a whole one) it declines instead.
private struct FlatObjectFields: EventFieldReader {
    let object: FlatJSONObject
    let declined: Declined

    func string(_ key: String) throws -> String {
        guard case .string(let value)? = object[key] else { throw Decline() }
        return value
    }

    func double(_ key: String) throws -> Double {
        guard let value = seconds(object[key]) else { throw Decline() }
        return value
    }

    func int(_ key: String) throws -> Int {
        guard case .integer(let value)? = object[key] else { throw Decline() }
        return value
    }

    func optionalString(_ key: String) -> String? {
        if case .string(let value)? = object[key] { return value }
        return nil
    }

    func optionalInt(_ key: String) -> Int? {
        switch object[key] {
        case .integer(let value)?: return value
        case .number?:
            // JSONSerialization's "2.0" may count as whole; not ours to decide.
            declined.value = true
            return nil
        default: return nil
        }
    }

    func optionalDouble(_ key: String) -> Double? { seconds(object[key]) }

    func has(_ key: String) -> Bool { object[key] != nil }

    func optionalBool(_ key: String) throws -> Bool? {
        switch object[key] {
        case nil: return nil
        case .bool(let value)?: return value
        default: throw Decline()
        }
    }

    func bool(_ key: String) throws -> Bool {
        guard let value = try optionalBool(key) else { throw Decline() }
        return value
    }

    func headers(_ key: String) -> [String: String] {
        guard case .object(let inner)? = object[key] else { return [:] }
        var headers: [String: String] = [:]
        for (name, value) in inner.members {
            if case .string(let text) = value { headers[name] = text }
        }
        return headers
    }

    func error(_ key: String) throws -> TransportError? {
        guard case .object(let inner)? = object[key] else { return nil }
        return try TransportError(fields: FlatObjectFields(object: inner, declined: declined))
    }

    func invalid(_ key: String, expected: String, found: String) -> Error { Decline() }

    /// ``JSONText/seconds(_:)`` for a flat value.
    private func seconds(_ value: FlatJSONObject.Value?) -> Double? {
        let number: Double
        switch value {
        case .integer(let whole)?: number = Double(whole)
        case .number(let double)?: number = double
        default: return nil
        }
        return number >= 0 && number <= JSONText.maxSeconds ? number : nil
    }
}
