import Foundation
import RequestEventFormat

/// `{{id.field.path}}` in a plan request's URL, headers or body: a value from the JSON
/// result of the parent request `id` (which must be in its `dependsOn`).
///
/// `{{login.token}}` is the `token` field of login's JSON answer; `{{list.items.0.id}}`
/// walks into arrays by index; `{{login}}` alone is the whole body as text.
/// `{{fault}}` is not a template of this kind (it is the embedded fault server's URL).
package struct PlanTemplate: Equatable {
    /// The text as written, such as `{{login.token}}`.
    package var text: String
    package var parent: String
    package var path: [String]

    private static let pattern = try! NSRegularExpression(pattern: #"\{\{\s*([^{}\s]+)\s*\}\}"#)

    /// Every template in `text` whose reference starts with one of `parents` (the longest
    /// that fits, as ids may contain dots). The rest come back as unknown references.
    package static func find(in text: String, parents: [String]) -> (templates: [PlanTemplate], unknown: [String]) {
        var templates: [PlanTemplate] = []
        var unknown: [String] = []
        let range = NSRange(text.startIndex..., in: text)
        for match in pattern.matches(in: text, range: range) {
            guard let whole = Range(match.range, in: text), let inner = Range(match.range(at: 1), in: text) else { continue }
            let reference = String(text[inner])
            if reference == "fault" { continue }
            let parent = parents.filter { reference == $0 || reference.hasPrefix($0 + ".") }.max { $0.count < $1.count }
            guard let parent else {
                unknown.append(String(text[whole]))
                continue
            }
            let rest = reference.dropFirst(parent.count).drop { $0 == "." }
            templates.append(PlanTemplate(text: String(text[whole]), parent: parent,
                                          path: rest.isEmpty ? [] : rest.split(separator: ".").map(String.init)))
        }
        return (templates, unknown)
    }

    /// The value this template stands for, from its parent's body.
    package func value(from body: Data) throws -> String {
        guard !path.isEmpty else { return String(decoding: body, as: UTF8.self) }
        guard var current = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) else {
            throw PlanTemplateError("\(text): the answer of \(parent) is not JSON")
        }
        var walked: [String] = []
        for key in path {
            walked.append(key)
            if let object = current as? [String: Any], let next = object[key] {
                current = next
            } else if let array = current as? [Any], let index = Int(key), array.indices.contains(index) {
                current = array[index]
            } else {
                throw PlanTemplateError("\(text): the answer of \(parent) has no \(walked.joined(separator: "."))")
            }
        }
        switch current {
        case let text as String: return text
        case is NSNull: return "null"
        case let number as NSNumber where !JSONText.isBoolean(number): return "\(number)"
        case let flag as Bool: return flag ? "true" : "false"
        default:
            let data = try JSONSerialization.data(withJSONObject: current, options: [.sortedKeys, .fragmentsAllowed])
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// `text` with every template replaced by its value; `encode` prepares a value for where
    /// it goes (percent-encoding in a URL, JSON escaping in a JSON body). A value the
    /// redaction rules would take out of the parent's answer (a field named `access_token`,
    /// or one inside `credentials`) is told to `secrets`, so it stays redacted in the child.
    package static func fill(_ text: String, parents: [String: Data], parentIDs: [String], encode: (String) -> String = { $0 },
                     secrets: DerivedSecrets = .shared) throws -> String {
        var out = text
        for template in find(in: text, parents: parentIDs).templates {
            guard let body = parents[template.parent] else { throw PlanTemplateError("\(template.text): \(template.parent) has no result") }
            let value = try template.value(from: body)
            if template.isSecret { secrets.add(value) }
            out = out.replacingOccurrences(of: template.text, with: encode(value))
        }
        return out
    }

    /// Whether a field on the template's path is one the redaction rules take out.
    package var isSecret: Bool {
        let rules = Redactor()
        return path.contains { rules.isSecretName($0) }
    }

    /// Safe anywhere in a URL: only unreserved characters are left as they are.
    package static func percentEncode(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    /// The inside of a JSON string literal.
    package static func jsonEscape(_ value: String) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: [value]), let text = String(data: data, encoding: .utf8) else { return value }
        return String(text.dropFirst(2).dropLast(2))
    }
}

package struct PlanTemplateError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
