import Foundation
import RequestEventFormat
import RequestTransportNIO

/// A plan's `"tls"` and `"proxy"`: the same settings as `--cacert`, `--cert`, `--key`,
/// `--insecure` and `--proxy` (the flags win when given). Relative file names are read from
/// the plan's folder, so a plan and its certificates travel together.
///
/// ```json
/// "tls": {"cacert": "certs/ca.pem", "cert": "certs/me.pem", "key": "certs/me-key.pem"},
/// "proxy": "http://proxy.internal:3128"
/// ```
package struct PlanConnection: Equatable {
    package var caFile: String?
    package var certificateFile: String?
    package var keyFile: String?
    package var insecure = false
    package var proxy: String?
    /// The plan's file, to name its fields in errors (not part of what the settings are).
    package var file = ""

    package static func == (lhs: PlanConnection, rhs: PlanConnection) -> Bool {
        (lhs.caFile, lhs.certificateFile, lhs.keyFile, lhs.insecure, lhs.proxy) == (rhs.caFile, rhs.certificateFile, rhs.keyFile, rhs.insecure, rhs.proxy)
    }
}

extension PlanParser {
    private static let tlsKeys: Set<String> = ["cacert", "cert", "key", "insecure"]

    package func connectionSettings(_ object: [String: Any]) throws -> PlanConnection {
        var settings = PlanConnection()
        settings.file = file
        settings.proxy = try json.string(object["proxy"], at: "proxy")
        guard let raw = object["tls"], !(raw is NSNull) else { return settings }
        guard let tls = raw as? [String: Any] else {
            throw PlanError(file: file, path: "tls", message: "expected an object such as {\"cacert\": \"ca.pem\"}, found \(StrictJSONReader.kind(raw))")
        }
        try json.checkKeys(tls, allowed: Self.tlsKeys, at: "tls")
        let folder = URL(fileURLWithPath: file).deletingLastPathComponent()
        func path(_ key: String) throws -> String? {
            try json.string(tls[key], at: "tls.\(key)").map { name in
                name.hasPrefix("/") ? name : folder.appendingPathComponent(name).path
            }
        }
        settings.caFile = try path("cacert")
        settings.certificateFile = try path("cert")
        settings.keyFile = try path("key")
        if let insecure = tls["insecure"] {
            guard JSONText.isBoolean(insecure), let value = insecure as? Bool else {
                throw PlanError(file: file, path: "tls.insecure", message: "expected true or false, found \(StrictJSONReader.kind(insecure))")
            }
            settings.insecure = value
        }
        return settings
    }
}
