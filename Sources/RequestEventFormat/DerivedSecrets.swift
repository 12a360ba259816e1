import Foundation
import Synchronization

/// Values the redaction rules took out of an answer, remembered for the whole stream: a value
/// that came as `access_token` in a login's answer is as secret when a later request carries
/// it in its URL or in a header whose name says nothing (`X-Forward: …`). Before, the
/// parent's body was redacted and the child's request showed the same token in the clear.
///
/// Filled two ways: every ``StreamRedactor`` learns the secret members of each answer body
/// it sees, and a program that builds a request from an answer (a plan's `{{login.token}}`)
/// adds the value it put in (``shared``), so it is known even when no body was recorded.
/// Values shorter than ``StreamRedactor/minimumLength`` are not kept, and at most
/// ``limit`` (the newest).
public final class DerivedSecrets: Sendable {
    /// The process's own: what every ``StreamRedactor`` scrubs besides its own learning.
    public static let shared = DerivedSecrets()
    public static let limit = 256

    /// Kept longest first (a value that holds another is replaced whole), sorted as they are
    /// added: every event of every stream reads them.
    private let values = Mutex<(order: [String], longestFirst: [String])>(([], []))

    public init() {}

    /// Remembers `value` (and the forms it takes in a URL or a JSON string).
    public func add(_ value: String) {
        guard value.count >= StreamRedactor.minimumLength, value != Redactor.placeholder else { return }
        var forms = [value]
        var unreserved = CharacterSet.alphanumerics
        unreserved.insert(charactersIn: "-._~")
        if let encoded = value.addingPercentEncoding(withAllowedCharacters: unreserved), encoded != value { forms.append(encoded) }
        if let data = try? JSONSerialization.data(withJSONObject: [value]), let json = String(data: data, encoding: .utf8) {
            let escaped = String(json.dropFirst(2).dropLast(2))
            if escaped != value { forms.append(escaped) }
        }
        values.withLock { values in
            let new = forms.filter { !values.order.contains($0) }
            guard !new.isEmpty else { return }
            values.order += new
            // The oldest go first when there are too many.
            if values.order.count > Self.limit { values.order.removeFirst(values.order.count - Self.limit) }
            values.longestFirst = values.order.sorted { $0.count > $1.count }
        }
    }

    /// What is remembered, longest first.
    public var all: [String] {
        values.withLock { $0.longestFirst }
    }

    public var isEmpty: Bool { values.withLock { $0.order.isEmpty } }
}
