import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response's status and header fields as a transport that does not speak URLSession
/// reports them (``TransportCallbacks/task(_:didReceive:)-(_,TransportResponse)``).
///
/// Why not an `HTTPURLResponse`: FoundationNetworking's initialiser capitalises every header
/// name and parses the content type and disposition, 5.4 µs for four fields on Linux — 5 % of
/// the CPU of a small GET on the NIO transport. The operation reads status and headers from
/// here and makes the `HTTPURLResponse` only for what takes one: a validator other than
/// ``StandardResponseValidator``, a result parser, a redirect.
public struct TransportResponse: Sendable {
    public let url: URL
    public let statusCode: Int
    /// `HTTP/1.1`, `HTTP/2.0`.
    public let httpVersion: String
    /// Header fields with their names as `HTTPURLResponse.allHeaderFields` gives them (see
    /// ``canonicalName(_:)``), so events and results read the same on every transport; a
    /// name sent twice has its values joined with ", ".
    public let headers: [String: String]
    /// Each value of a header sent more than once, in order, by its name in ``headers``
    /// (empty when none was): what a proxy passes on as it came (two `Set-Cookie` joined by
    /// ", " are not two cookies to a client).
    public let repeatedHeaders: [String: [String]]
    /// The fields as received: in order, each repeat apart, names as the server spelled them
    /// (what a proxy relays). A field whose name is not one (RFC 9110 §5.1) is left out.
    /// Nil when the transport was not asked to keep them (`keepingFields`).
    public let fieldsAsReceived: HTTPFields?

    /// - Parameter fields: the fields in the order received, names as sent. (Inlinable, so
    ///   it is specialised for the caller's sequence: a transport's own header type.)
    /// - Parameter keepingFields: keep them in order as well (``fieldsAsReceived``): a proxy's
    ///   requests need them; every other answer is spared making them.
    @inlinable
    public init(url: URL, statusCode: Int, httpVersion: String, fields: some Sequence<(String, String)>, keepingFields: Bool = true) {
        self.url = url
        self.statusCode = statusCode
        self.httpVersion = httpVersion
        var headers: [String: String] = [:]
        // Room for a usual head at once (a filtered sequence does not know its count): grown
        // as the fields came, the table was made three times for a handful of fields (#58).
        headers.reserveCapacity(max(fields.underestimatedCount, 8))
        var repeated: [String: [String]] = [:]
        var received = HTTPFields()
        for (name, value) in fields where !name.isEmpty {
            if keepingFields, let fieldName = HTTPField.Name(name) { received.append(HTTPField(name: fieldName, value: value)) }
            let name = Self.canonicalName(name)
            if let earlier = headers[name] {
                headers[name] = "\(earlier), \(value)"
                if repeated[name] == nil { repeated[name] = [earlier, value] } else { repeated[name]!.append(value) }
            } else {
                headers[name] = value
            }
        }
        self.headers = headers
        self.repeatedHeaders = repeated
        self.fieldsAsReceived = keepingFields ? received : nil
    }

    /// `Content-Length`, when it is a number of bytes.
    public var expectedContentLength: Int? {
        headers["Content-Length"].flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    /// The same response as FoundationNetworking's type.
    public func httpURLResponse() -> HTTPURLResponse {
        // The names are canonical already; the initialiser maps them to themselves.
        HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: httpVersion, headerFields: headers)!
    }

    /// A header name as `HTTPURLResponse` files it (swift-corelibs-foundation, matching
    /// Darwin): names starting `x-` kept as sent, `WWW-Authenticate` spelt so, any other
    /// capitalised — each letter after a non-letter upper case, the rest lower case
    /// (`content-md5` → `Content-Md5`, `p3p` → `P3P`). Done here for names of ASCII letters,
    /// digits, `-` and `_`, which is every real one, at a fraction of `String.capitalized`'s
    /// cost; others go to it (it does not break words at every symbol: `a'b` → `A'b`).
    public static func canonicalName(_ name: String) -> String {
        let utf8 = name.utf8
        if utf8.count >= 2, utf8.first! | 0x20 == UInt8(ascii: "x"), utf8.dropFirst().first == UInt8(ascii: "-") { return name }
        // One look: are all bytes plain, and is the name canonical already (most servers
        // send `Content-Type`, `Date`): then it is returned as it is, nothing made.
        var plain = true, canonical = true, afterLetter = false
        for byte in utf8 {
            let lower = byte | 0x20
            let isLetter = lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z")
            guard isLetter || byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") else {
                plain = false
                break
            }
            if isLetter, byte != (afterLetter ? lower : lower & ~0x20) { canonical = false }
            afterLetter = isLetter
        }
        guard plain else {
            return name.caseInsensitiveCompare("WWW-Authenticate") == .orderedSame ? "WWW-Authenticate" : name.capitalized
        }
        if canonical { return name == "Www-Authenticate" ? "WWW-Authenticate" : name }
        var out = Array(utf8)
        afterLetter = false
        for index in out.indices {
            let lower = out[index] | 0x20
            let isLetter = lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z")
            if isLetter { out[index] = afterLetter ? lower : lower & ~0x20 }
            afterLetter = isLetter
        }
        let made = String(decoding: out, as: UTF8.self)
        return made == "Www-Authenticate" ? "WWW-Authenticate" : made
    }
}
