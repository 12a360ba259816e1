import Foundation
import HTTPTypes

/// A request's header fields as its sender wrote them — their order, each repeat a field of
/// its own, names spelled as sent — beside the request's headers (`URLRequest` keeps one value
/// per name, in no order, re-spelled).
///
/// A proxy's client wrote them (``RequestOptions/fieldsAsSent``); a transport that writes its
/// own heads (NIO's) sends the request's headers arranged by them (``arranged(_:)``), so what
/// the server reads is what the client said. The request's headers stay the truth for values:
/// a field an interceptor or a person at a breakpoint changed goes out changed, once, where it
/// stood; one they removed does not go; one they added goes after the rest.
public struct FieldsAsSent: Sendable, Equatable {
    public let fields: HTTPFields

    public init(_ fields: HTTPFields) {
        self.fields = fields
    }

    /// `pairs` as fields; a pair whose name is not a field name (RFC 9110 §5.1) is left out.
    public init(_ pairs: some Sequence<(String, String)>) {
        var fields = HTTPFields()
        for (name, value) in pairs {
            guard let name = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        self.fields = fields
    }

    /// The values of a name given more than once, as one header value: `; ` between cookies
    /// (RFC 6265 §5.4), `, ` between anything else's (RFC 9110 §5.3).
    public static func joined(_ values: [String], canonicalName: String) -> String {
        values.joined(separator: canonicalName == "cookie" ? "; " : ", ")
    }

    /// One value per name, as a `URLRequest` holds them, spelled as first sent.
    public var joinedByName: [(name: String, value: String)] {
        var order: [String] = []
        var byName: [String: (name: String, values: [String])] = [:]
        for field in fields {
            let key = field.name.canonicalName
            if byName[key] == nil {
                order.append(key)
                byName[key] = (field.name.rawName, [field.value])
            } else {
                byName[key]!.values.append(field.value)
            }
        }
        return order.map { key in
            let entry = byName[key]!
            return (entry.name, Self.joined(entry.values, canonicalName: key))
        }
    }

    /// `current` (the request's headers as it goes out) in the order and spelling these fields
    /// were sent: a name whose value is still what was sent goes as its fields went, each
    /// repeat apart; a changed one goes once, changed, where it first stood; names not sent
    /// go last, in `current`'s order.
    public func arranged(_ current: some Sequence<(String, String)>) -> [(String, String)] {
        var now: [String: (name: String, value: String)] = [:]
        var added: [String] = []
        for (name, value) in current {
            let key = name.lowercased()
            if now[key] == nil { added.append(key) }
            now[key] = (name, value)
        }
        var sentValues: [String: [String]] = [:]
        for field in fields { sentValues[field.name.canonicalName, default: []].append(field.value) }
        var arranged: [(String, String)] = []
        var placed: Set<String> = []
        for field in fields {
            let key = field.name.canonicalName
            guard let current = now[key] else { continue }
            if current.value == Self.joined(sentValues[key]!, canonicalName: key) {
                arranged.append((field.name.rawName, field.value))
            } else if placed.insert(key).inserted {
                arranged.append((field.name.rawName, current.value))
            }
        }
        for key in added where sentValues[key] == nil {
            arranged.append((now[key]!.name, now[key]!.value))
        }
        return arranged
    }
}
