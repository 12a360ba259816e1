import Foundation
import NIOHTTP1

/// The headers that belong to one connection and not to the message (RFC 9110 §7.6.1): a
/// proxy drops them in both directions, with every header `Connection` names, and frames the
/// message itself on each leg.
enum HopByHopHeaders {
    /// Always connection-specific, named or not (`Proxy-Connection` is not in the RFC; clients
    /// still send it, and it means what `Connection` means).
    static let always: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate",
        "te", "trailer", "transfer-encoding", "upgrade",
    ]

    /// `headers` without the hop-by-hop ones, in their order, duplicates kept.
    static func removed(from headers: HTTPHeaders) -> [(String, String)] {
        var named = always
        for value in headers["connection"] + headers["proxy-connection"] {
            for token in value.split(separator: ",") {
                named.insert(token.trimmingCharacters(in: .whitespaces).lowercased())
            }
        }
        return headers.filter { !named.contains($0.name.lowercased()) }.map { ($0.name, $0.value) }
    }

    /// The same, for an answer the engine read: one field per value, a header sent more than
    /// once (`repeated`: two `Set-Cookie`) passed on as that many fields, not joined.
    static func removed(from headers: [String: String], repeated: [String: [String]] = [:]) -> [(String, String)] {
        var named = always
        for (name, value) in headers where name.lowercased() == "connection" {
            for token in value.split(separator: ",") {
                named.insert(token.trimmingCharacters(in: .whitespaces).lowercased())
            }
        }
        return headers.filter { !named.contains($0.key.lowercased()) }.sorted { $0.key < $1.key }.flatMap { name, value in
            (repeated[name] ?? [value]).map { (name, $0) }
        }
    }
}
