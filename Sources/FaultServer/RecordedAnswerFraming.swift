import ChannelGlue
import Foundation

/// What a recorded answer becomes on the wire when the fault server says it again
/// (`reqtop serve --from`, `reqtop whatif`). A recording is input: it may hold a status no
/// server can send as a final answer (a browser's `101` for a WebSocket, a `100` or `103`, a
/// `-1` for "no answer"), framing headers that no longer describe the body, or a header that
/// cannot be written at all. None of these may take the server down; each is named instead.
public enum RecordedAnswerFraming {
    /// The header on a stand-in answer that says why the recorded one could not be sent.
    public static let unservableHeader = "X-Reqtop-Unservable"
    /// The header that counts recorded headers left out because they cannot be written.
    public static let droppedHeadersHeader = "X-Reqtop-Dropped-Headers"

    /// What the server sends.
    public enum Framed: Equatable {
        /// The recorded status, the headers that can be sent, the recorded body (none for a
        /// status that has none). `dropped` counts the headers left out as unwritable.
        case answer(status: Int, headers: [Header], body: [UInt8], dropped: Int)
        /// A `502` in its place, saying why.
        case unservable(reason: String)
    }

    public struct Header: Equatable, Sendable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) { (self.name, self.value) = (name, value) }
    }

    /// Headers the server makes itself for the body it sends, and the connection's own
    /// (``ConnectionFields``): recorded, they would describe a connection that is gone.
    static let madeHere: Set<String> = ConnectionFields.names.union(["content-length"])

    public static func frame(status: Int, headers: [(String, String)], body: [UInt8]) -> Framed {
        guard (100...999).contains(status) else {
            return .unservable(reason: "recorded status \(status) is not an HTTP status")
        }
        guard status >= 200 else {
            return .unservable(reason: "recorded status \(status) is informational, not a final answer")
        }
        // The headers a recorded `Connection` names are the connection's too.
        let named = ConnectionFields.namedByConnection(in: headers)
        var kept: [Header] = []
        var dropped = 0
        for (name, value) in headers {
            let lower = name.lowercased()
            if madeHere.contains(lower) || named.contains(lower) { continue }
            guard isToken(name), isFieldValue(value) else {
                dropped += 1
                continue
            }
            kept.append(Header(name, value))
        }
        // 204 and 304 have no body (RFC 9110 §6.4.1): a recorded one is not sent.
        let hasBody = status != 204 && status != 304
        return .answer(status: status, headers: kept, body: hasBody ? body : [], dropped: dropped)
    }

    /// RFC 9110 §5.6.2: a header name is a token.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default:
                "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
    }

    /// RFC 9110 §5.5: no CR, LF or NUL in a field value (the only bytes that break framing).
    static func isFieldValue(_ text: String) -> Bool {
        !text.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
    }
}
