import ChannelGlue
import Foundation
import HTTPTypes
import NIOHTTP1

/// A proxy drops the fields that belong to one connection (``ConnectionFields``) in both
/// directions and frames the message itself on each leg.
enum HopByHopHeaders {
    /// `fields` without the hop-by-hop ones, in their order, duplicates kept.
    static func removed(from fields: [(String, String)]) -> [(String, String)] {
        // Those a `Connection` field names besides the ones always the connection's: most
        // heads name none (`keep-alive`, `close`), and then a field that cannot be one of
        // those is kept without lower-casing its name.
        let named = ConnectionFields.namedByConnection(in: fields)
        let namesOthers = !named.isSubset(of: ConnectionFields.names)
        var kept: [(String, String)] = []
        kept.reserveCapacity(fields.count)
        for (name, value) in fields {
            guard namesOthers || ConnectionFields.mayBeAlwaysTheConnections(name) else {
                kept.append((name, value))
                continue
            }
            let lower = name.lowercased()
            // `TE: trailers` says the client reads trailers, which this proxy relays (a gRPC
            // server refuses a call without it); any other `TE` stays the connection's.
            if lower == "te", value.trimmingCharacters(in: .whitespaces).lowercased() == "trailers", !named.contains("trailers") {
                if !named.contains("te") { kept.append((name, value)) }
                continue
            }
            if !ConnectionFields.names.contains(lower), !named.contains(lower) { kept.append((name, value)) }
        }
        return kept
    }

    /// The transfer codings a `Transfer-Encoding` value names other than `chunked` (`gzip` of
    /// `gzip, chunked`), in order. The proxy frames each leg itself with NIO's codec, which
    /// knows `chunked` only: such a message's coding would be dropped while its bytes kept it,
    /// so it is refused rather than passed on corrupt (none of the clients and servers tried
    /// sends one). Nil, or only `chunked`: none.
    static func otherTransferCodings(in values: [String]) -> [String] {
        values.flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { $0 != "chunked" && !$0.isEmpty }
    }

    /// A client's request head's fields.
    static func removed(from headers: HTTPHeaders) -> [(String, String)] {
        removed(from: headers.map { ($0.name, $0.value) })
    }

    /// An answer's fields as received: in their order, names as sent, each repeat apart.
    static func removed(from fields: HTTPFields) -> [(String, String)] {
        removed(from: fields.map { ($0.name.rawName, $0.value) })
    }

    /// An answer the engine read from a transport that does not keep its fields' order
    /// (URLSession's), one field per value: a header sent more than once
    /// (`repeated`: two `Set-Cookie`) passed on as that many fields, not joined.
    static func removed(from headers: [String: String], repeated: [String: [String]] = [:]) -> [(String, String)] {
        removed(from: headers.sorted { $0.key < $1.key }.flatMap { name, value in (repeated[name] ?? [value]).map { (name, $0) } })
    }
}
