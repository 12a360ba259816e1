import Foundation
import HTTPTypes

/// Header fields in their order (``RequestMessage/headerFields``) beside the one-value-per-name
/// view `URLRequest` and `[String: String]` give of them, both ways.
public enum FieldMerge {
    /// The values of a name given more than once, as one header value: `; ` between cookies
    /// (RFC 6265 §5.4), `, ` between anything else's (RFC 9110 §5.3).
    public static func joined(_ values: [String], canonicalName: String) -> String {
        values.joined(separator: canonicalName == "cookie" ? "; " : ", ")
    }

    /// `pairs` as fields, in their order; a pair whose name is not a field name (RFC 9110
    /// §5.1) is left out.
    ///
    /// Inlinable, so it is specialised for the caller's sequence (the proxy's NIO head, once a
    /// request): generic, each pair came through a witness table call (#58).
    @inlinable
    public static func fields(_ pairs: some Sequence<(String, String)>) -> HTTPFields {
        var fields = HTTPFields()
        fields.reserveCapacity(pairs.underestimatedCount)
        for (name, value) in pairs {
            guard let name = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        return fields
    }

    /// One value per name, spelled as first written, in the order names first appear.
    public static func joinedByName(_ fields: HTTPFields) -> [(name: String, value: String)] {
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
            return (entry.name, joined(entry.values, canonicalName: key))
        }
    }

    /// `fields` as `current` (one value per name: what code given a `URLRequest` made of them)
    /// says they now are, in `fields`' order and spelling: a name whose value is still what
    /// `fields` joined to goes as its fields went, each repeat apart; a changed one goes once,
    /// changed, where it first stood; a name `current` lacks goes; names `fields` lacked
    /// come last, in `current`'s order.
    public static func merged(_ fields: HTTPFields, with current: some Sequence<(String, String)>) -> HTTPFields {
        var now: [String: (name: String, value: String)] = [:]
        var added: [String] = []
        for (name, value) in current {
            let key = name.lowercased()
            if now[key] == nil { added.append(key) }
            now[key] = (name, value)
        }
        var sentValues: [String: [String]] = [:]
        for field in fields { sentValues[field.name.canonicalName, default: []].append(field.value) }
        var merged = HTTPFields()
        var placed: Set<String> = []
        for field in fields {
            let key = field.name.canonicalName
            guard let current = now[key] else { continue }
            if current.value == joined(sentValues[key]!, canonicalName: key) {
                merged.append(field)
            } else if placed.insert(key).inserted {
                merged.append(HTTPField(name: field.name, value: current.value))
            }
        }
        for key in added where sentValues[key] == nil {
            guard let name = HTTPField.Name(now[key]!.name) else { continue }
            merged.append(HTTPField(name: name, value: now[key]!.value))
        }
        return merged
    }
}
