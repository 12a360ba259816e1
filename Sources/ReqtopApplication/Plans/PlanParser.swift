import Foundation
import RequestArchive
import RequestEventFormat
import RequestOperations

/// A problem with a plan: the file, where in it (a JSON path such as `requests[2].url`),
/// and what was expected.
package typealias PlanError = StrictJSONError

/// Reads a plan file strictly: every field is checked, unknown fields are errors (a typo
/// such as `maxAttemps` must not silently fall back to a default), and each error names
/// its place in the file.
package struct PlanParser {
    package let file: String
    /// Reads fields strictly and names their place in errors.
    package var json: StrictJSONReader { StrictJSONReader(file: file) }

    package static let methods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]
    private static let planKeys: Set<String> = ["requests", "retry", "timeout", "deadline", "maxConcurrent", "maxConcurrentPerHost",
                                                "auth", "batches", "transport", "retryBudgetPerHost", "circuitBreaker", "rateLimitPushback", "hedge",
                                                "redirects", "tls", "proxy", "bodyCap", "readTimeout", "faults"]
    private static let requestKeys: Set<String> = ["id", "method", "url", "headers", "body", "retry", "timeout", "deadline",
                                                   "dependsOn", "batch", "auth", "priority", "hedge", "redirects", "saveTo", "readTimeout", "bodyFile",
                                                   "maxFileBytes"]
    private static let authKeys: Set<String> = ["tokenURL", "credentials", "tokenField"]
    private static let batchKeys: Set<String> = ["size", "timeLimit"]
    package static let priorities: [String: Operation.QueuePriority] = ["veryLow": .veryLow, "low": .low, "normal": .normal, "high": .high,
                                                               "veryHigh": .veryHigh]
    private static let retryKeys: Set<String> = ["maxAttempts", "baseDelay", "multiplier", "maxDelay", "jitter", "retryNonIdempotent", "retryBudget", "earlyRetry"]

    package static func load(path: String) throws -> Plan {
        let data: Data
        do {
            data = try InputFile.read(path)
        } catch let error as ArchiveError {
            throw PlanError(file: error.file, path: "", message: error.message)
        }
        return try PlanParser(file: path).parse(data)
    }

    package func parse(_ data: Data) throws -> Plan {
        guard !data.allSatisfy({ [0x20, 0x0A, 0x0D, 0x09].contains($0) }) else {
            throw PlanError(file: file, path: "", message: "is empty: a plan is a JSON object with \"requests\"")
        }
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw PlanError(file: file, path: "", message: "not valid JSON (\(StrictJSONReader.describe(jsonError: error, in: data)))")
        }
        guard let object = root as? [String: Any] else {
            throw PlanError(file: file, path: "", message: "expected a JSON object with a \"requests\" array, found \(StrictJSONReader.kind(root))")
        }
        try json.checkKeys(object, allowed: Self.planKeys, at: "")

        let retry = try retrySettings(object["retry"], base: RetrySettings(), at: "retry")
        let timeout = try json.timeLimit(object["timeout"], at: "timeout")
        let deadline = try json.timeLimit(object["deadline"], at: "deadline") ?? 300
        let maxConcurrent = try json.integer(object["maxConcurrent"], at: "maxConcurrent", minimum: 1) ?? 6
        let perHost = try json.integer(object["maxConcurrentPerHost"], at: "maxConcurrentPerHost", minimum: 1)
        let auth = try authSettings(object["auth"])
        let batches = try batchSettings(object["batches"])
        let retryBudget = try retryBudgetSettings(object["retryBudgetPerHost"])
        let circuitBreaker = try circuitBreakerSettings(object["circuitBreaker"])
        let hedge = try hedgeSettings(object["hedge"], base: nil, at: "hedge")
        let redirects = try redirectSettings(object["redirects"], base: 10, at: "redirects")
        var rateLimitPushback = true
        if let raw = object["rateLimitPushback"] {
            guard JSONText.isBoolean(raw), let value = raw as? Bool else {
                throw PlanError(file: file, path: "rateLimitPushback", message: "expected true or false, found \(StrictJSONReader.kind(raw))")
            }
            rateLimitPushback = value
        }
        var transport: TransportChoice?
        if let name = try json.string(object["transport"], at: "transport") {
            guard let choice = TransportChoice(rawValue: name) else {
                throw PlanError(file: file, path: "transport", message: "\"\(name)\" is not a transport; expected urlsession or nio")
            }
            transport = choice
        }

        let connection = try connectionSettings(object)
        let faults = try faultRules(object["faults"])
        // `false` turns it off; absent: the library's 60 s.
        let readTimeout: TimeInterval? = object["readTimeout"].map { JSONText.isBoolean($0) && ($0 as? Bool) == false } == true
            ? nil : try json.timeLimit(object["readTimeout"], at: "readTimeout") ?? RequestOptions.defaultReadTimeout
        let bodyCap = try json.integer(object["bodyCap"], at: "bodyCap", minimum: 0, maximum: EventLogWriter.maxBodyCap)
        guard let list = object["requests"] else {
            throw PlanError(file: file, path: "requests", message: "missing; expected an array of requests")
        }
        guard let requests = list as? [Any] else {
            throw PlanError(file: file, path: "requests", message: "expected an array of requests, found \(StrictJSONReader.kind(list))")
        }
        guard !requests.isEmpty else {
            throw PlanError(file: file, path: "requests", message: "empty; expected at least one request")
        }
        var planned: [PlannedRequest] = []
        var seen: [String: Int] = [:]
        for (index, item) in requests.enumerated() {
            var request = try plannedRequest(item, index: index, retry: retry, timeout: timeout, deadline: deadline,
                                             hasAuth: auth != nil, batches: batches)
            if let object = item as? [String: Any] {
                request.hedge = try hedgeSettings(object["hedge"], base: hedge, at: "requests[\(index)].hedge")
                request.maxRedirects = try redirectSettings(object["redirects"], base: redirects, at: "requests[\(index)].redirects")
                request.saveTo = try saveTo(object["saveTo"], at: "requests[\(index)].saveTo")
                request.maxFileBytes = try json.byteCount(object["maxFileBytes"], at: "requests[\(index)].maxFileBytes", minimum: 1)
                if request.maxFileBytes != nil, request.saveTo == nil {
                    throw PlanError(file: file, path: "requests[\(index)].maxFileBytes", message: "a limit for the file \"saveTo\" names; this request has none")
                }
                request.bodyFile = try bodyFile(object["bodyFile"], at: "requests[\(index)].bodyFile")
                if request.bodyFile != nil, object["body"] != nil {
                    throw PlanError(file: file, path: "requests[\(index)].bodyFile", message: "a request has \"body\" or \"bodyFile\", not both")
                }
                request.readTimeout = try json.timeLimit(object["readTimeout"], at: "requests[\(index)].readTimeout") ?? readTimeout
                // Asked for by name on a request that may act twice: say so (a plan-wide hedge
                // just leaves such requests alone, as the engine does).
                if object["hedge"] != nil, request.hedge != nil, !HedgePolicy.allows(request.urlRequest(faultServer: nil)) {
                    throw PlanError(file: file, path: "requests[\(index)].hedge",
                                    message: "\(request.method) is never hedged: a second copy could act twice; add an Idempotency-Key header or remove \"hedge\"")
                }
            }
            if let first = seen[request.id] {
                throw PlanError(file: file, path: "requests[\(index)].id",
                                message: "\"\(request.id)\" is already the id of requests[\(first)]; ids must be unique")
            }
            seen[request.id] = index
            planned.append(request)
        }
        return Plan(maxConcurrent: maxConcurrent, maxConcurrentPerHost: perHost, auth: auth, batches: batches,
                    requests: try PlanOrdering(file: file).ordered(planned, indices: seen), transport: transport,
                    retryBudgetPerHost: retryBudget, circuitBreaker: circuitBreaker, rateLimitPushback: rateLimitPushback,
                    connection: connection, bodyCap: bodyCap, faults: faults)
    }

    private func authSettings(_ raw: Any?) throws -> AuthSettings? {
        guard let raw, !(raw is NSNull) else { return nil }
        guard let object = raw as? [String: Any] else {
            throw PlanError(file: file, path: "auth", message: "expected an object with \"tokenURL\" and \"credentials\", found \(StrictJSONReader.kind(raw))")
        }
        try json.checkKeys(object, allowed: Self.authKeys, at: "auth")
        guard let url = try json.string(object["tokenURL"], at: "auth.tokenURL") else {
            throw PlanError(file: file, path: "auth.tokenURL", message: "missing; expected the URL that answers a POST of the credentials with a token")
        }
        try checkURL(url, at: "auth.tokenURL")
        guard let credentials = object["credentials"] as? [String: Any] else {
            throw PlanError(file: file, path: "auth.credentials",
                            message: object["credentials"] == nil ? "missing; expected an object such as {\"username\": ..., \"password\": ...}"
                                : "expected an object of strings, found \(StrictJSONReader.kind(object["credentials"]!))")
        }
        var fields: [String: String] = [:]
        for (key, value) in credentials {
            guard let text = value as? String else {
                throw PlanError(file: file, path: "auth.credentials.\(key)", message: "expected a string, found \(StrictJSONReader.describe(value))")
            }
            fields[key] = text
        }
        return AuthSettings(tokenURL: url, credentials: fields, tokenField: try json.string(object["tokenField"], at: "auth.tokenField") ?? "token")
    }

    private func batchSettings(_ raw: Any?) throws -> [String: BatchSettings] {
        guard let raw, !(raw is NSNull) else { return [:] }
        guard let object = raw as? [String: Any] else {
            throw PlanError(file: file, path: "batches", message: "expected an object of batch names to {\"size\": N, \"timeLimit\": S}, found \(StrictJSONReader.kind(raw))")
        }
        var batches: [String: BatchSettings] = [:]
        for (name, value) in object.sorted(by: { $0.key < $1.key }) {
            let at = "batches.\(name)"
            guard let settings = value as? [String: Any] else {
                throw PlanError(file: file, path: at, message: "expected an object such as {\"size\": 3, \"timeLimit\": 2}, found \(StrictJSONReader.kind(value))")
            }
            try json.checkKeys(settings, allowed: Self.batchKeys, at: at)
            guard let size = try json.integer(settings["size"], at: "\(at).size", minimum: 1) else {
                throw PlanError(file: file, path: "\(at).size", message: "missing; expected how many requests are released together (1 or more)")
            }
            batches[name] = BatchSettings(size: size, timeLimit: try json.seconds(settings["timeLimit"], at: "\(at).timeLimit"))
        }
        return batches
    }

    private func checkURL(_ urlText: String, at path: String) throws {
        // Templates ({{fault}}, {{parent.field}}) are filled in later; check the rest.
        let checkable = urlText.replacingOccurrences(of: Plan.faultServerPlaceholder, with: "http://127.0.0.1:1")
            .replacingOccurrences(of: #"\{\{[^{}]*\}\}"#, with: "x", options: .regularExpression)
        guard let url = URL(string: checkable), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              url.host?.isEmpty == false
        else {
            throw PlanError(file: file, path: path, message: "\"\(urlText)\" is not an absolute http or https URL")
        }
    }

    private func plannedRequest(_ item: Any, index: Int, retry: RetrySettings, timeout: TimeInterval?,
                                deadline: TimeInterval, hasAuth: Bool, batches: [String: BatchSettings]) throws -> PlannedRequest {
        let at = "requests[\(index)]"
        guard let object = item as? [String: Any] else {
            throw PlanError(file: file, path: at, message: "expected an object with at least \"url\", found \(StrictJSONReader.kind(item))")
        }
        try json.checkKeys(object, allowed: Self.requestKeys, at: at)

        let id = try json.string(object["id"], at: "\(at).id") ?? "req-\(index + 1)"
        guard !id.isEmpty else { throw PlanError(file: file, path: "\(at).id", message: "empty; expected a non-empty string") }

        // Any RFC 9110 method token (PROPFIND, QUERY, PURGE, ...): the eight standard ones
        // may be written in any case; others are sent as written, and are not idempotent to
        // the retry policy unless the plan says so (retryNonIdempotent, Idempotency-Key).
        let written = (try json.string(object["method"], at: "\(at).method") ?? "GET")
        let method = Self.methods.contains(written.uppercased()) ? written.uppercased() : written
        guard HTTPFieldCheck.isToken(method) else {
            throw PlanError(file: file, path: "\(at).method",
                            message: "\(StrictJSONReader.describe(written)) is not a method: a method is one word of letters, digits or !#$%&'*+-.^_`|~")
        }

        guard let urlText = try json.string(object["url"], at: "\(at).url") else {
            throw PlanError(file: file, path: "\(at).url", message: "missing; expected an absolute http or https URL")
        }
        try checkURL(urlText, at: "\(at).url")

        var headers = try json.headers(object["headers"], at: "\(at).headers")

        var body: Data?
        if let raw = object["body"], !(raw is NSNull) {
            if let text = raw as? String {
                body = Data(text.utf8)
            } else if JSONSerialization.isValidJSONObject(raw) {
                body = try? JSONSerialization.data(withJSONObject: raw, options: [.sortedKeys])
                if !headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
                    headers["Content-Type"] = "application/json"
                }
            } else {
                throw PlanError(file: file, path: "\(at).body", message: "expected a string, an object or an array, found \(StrictJSONReader.kind(raw))")
            }
        }

        var dependsOn: [String] = []
        switch object["dependsOn"] {
        case nil, is NSNull: break
        case let single as String: dependsOn = [single]
        case let list as [Any]:
            for (position, value) in list.enumerated() {
                guard let parent = value as? String else {
                    throw PlanError(file: file, path: "\(at).dependsOn[\(position)]", message: "expected a request id, found \(StrictJSONReader.describe(value))")
                }
                dependsOn.append(parent)
            }
        case let other?:
            throw PlanError(file: file, path: "\(at).dependsOn", message: "expected a request id or an array of ids, found \(StrictJSONReader.kind(other))")
        }
        // Every {{id.field}} must name a parent: a value from a request that may not have
        // run yet would be a guess.
        let texts = [("url", urlText)] + headers.sorted { $0.key < $1.key }.map { ("headers.\($0.key)", $0.value) }
            + [("body", body.map { String(decoding: $0, as: UTF8.self) } ?? "")]
        for (field, text) in texts {
            if let unknown = PlanTemplate.find(in: text, parents: dependsOn).unknown.first {
                throw PlanError(file: file, path: "\(at).\(field)",
                                message: "\(unknown) names no request in \"dependsOn\" (\(dependsOn.isEmpty ? "none" : dependsOn.joined(separator: ", ")))"
                                    + "; write {{ID.field}} with ID listed in dependsOn")
            }
        }

        let batch = try json.string(object["batch"], at: "\(at).batch")
        if let batch, batches[batch] == nil {
            throw PlanError(file: file, path: "\(at).batch", message: "no batch \"\(batch)\" in \"batches\""
                                + (batches.isEmpty ? " (the plan has none)" : "; expected one of \(batches.keys.sorted().joined(separator: ", "))"))
        }
        var auth = hasAuth
        if let raw = object["auth"] {
            guard let flag = raw as? Bool, JSONText.isBoolean(raw) else {
                throw PlanError(file: file, path: "\(at).auth", message: "expected true or false, found \(StrictJSONReader.describe(raw))")
            }
            if flag, !hasAuth {
                throw PlanError(file: file, path: "\(at).auth", message: "true, but the plan has no top-level \"auth\" to say where tokens come from")
            }
            auth = flag
        }
        var priority = Operation.QueuePriority.normal
        if let raw = object["priority"] {
            guard let name = raw as? String, let value = Self.priorities[name] else {
                throw PlanError(file: file, path: "\(at).priority",
                                message: "expected one of veryLow, low, normal, high, veryHigh, found \(StrictJSONReader.describe(raw))")
            }
            priority = value
        }

        return PlannedRequest(id: id, method: method, url: urlText, headers: headers, body: body,
                              retry: try retrySettings(object["retry"], base: retry, at: "\(at).retry"),
                              attemptTimeout: try json.timeLimit(object["timeout"], at: "\(at).timeout") ?? timeout,
                              deadline: try json.timeLimit(object["deadline"], at: "\(at).deadline") ?? deadline,
                              dependsOn: dependsOn, batch: batch, auth: auth, priority: priority)
    }

    /// `"redirects"`: how many an attempt follows (a whole number from 0), or `false` for none.
    private func redirectSettings(_ raw: Any?, base: Int, at: String) throws -> Int {
        guard let raw, !(raw is NSNull) else { return base }
        if JSONText.isBoolean(raw), let value = raw as? Bool { return value ? 10 : 0 }
        guard let count = JSONText.integer(raw), (0...100).contains(count) else {
            throw PlanError(file: file, path: at, message: "expected a number of redirects from 0 to 100, or false, found \(StrictJSONReader.describe(raw))")
        }
        return count
    }

    private func retrySettings(_ raw: Any?, base: RetrySettings, at: String) throws -> RetrySettings {
        guard let raw else { return base }
        guard let object = raw as? [String: Any] else {
            throw PlanError(file: file, path: at, message: "expected an object, found \(StrictJSONReader.kind(raw))")
        }
        try json.checkKeys(object, allowed: Self.retryKeys, at: at)
        var settings = base
        if let value = try json.integer(object["maxAttempts"], at: "\(at).maxAttempts", minimum: 1) { settings.maxAttempts = value }
        if let value = try json.seconds(object["baseDelay"], at: "\(at).baseDelay") { settings.baseDelay = value }
        if let value = try json.number(object["multiplier"], at: "\(at).multiplier") {
            guard value >= 1 else { throw PlanError(file: file, path: "\(at).multiplier", message: "\(value) is less than 1; expected a number of at least 1") }
            settings.multiplier = value
        }
        if let value = try json.seconds(object["maxDelay"], at: "\(at).maxDelay") { settings.maxDelay = value }
        if let raw = object["jitter"] {
            let names = Jitter.allCases.map(\.rawValue)
            guard let name = raw as? String, let jitter = Jitter(rawValue: name) else {
                throw PlanError(file: file, path: "\(at).jitter", message: "expected one of \(names.joined(separator: ", ")), found \(StrictJSONReader.describe(raw))")
            }
            settings.jitter = jitter
        }
        if let raw = object["retryNonIdempotent"] {
            guard let flag = raw as? Bool, JSONText.isBoolean(raw) else {
                throw PlanError(file: file, path: "\(at).retryNonIdempotent", message: "expected true or false, found \(StrictJSONReader.describe(raw))")
            }
            settings.retryNonIdempotent = flag
        }
        if let raw = object["earlyRetry"] {
            guard let flag = raw as? Bool, JSONText.isBoolean(raw) else {
                throw PlanError(file: file, path: "\(at).earlyRetry", message: "expected true or false, found \(StrictJSONReader.describe(raw))")
            }
            settings.earlyRetry = flag
        }
        if object.keys.contains("retryBudget") {
            settings.retryBudget = object["retryBudget"] is NSNull ? nil : try json.seconds(object["retryBudget"], at: "\(at).retryBudget")
        }
        return settings
    }
}

extension PlanParser {
    /// A `bodyFile`: relative names from the plan's folder; a readable regular file, checked
    /// before anything is sent (its bytes are read only as they are sent).
    package func bodyFile(_ raw: Any?, at path: String) throws -> String? {
        guard let name = try json.string(raw, at: path) else { return nil }
        guard !name.isEmpty else { throw PlanError(file: file, path: path, message: "empty; expected a file name") }
        let full = name.hasPrefix("/") ? name : URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent(name).path
        do {
            _ = try BodyFile.size(of: URL(fileURLWithPath: full))
        } catch {
            throw PlanError(file: file, path: path, message: "\(error)")
        }
        return full
    }

    /// A `saveTo` file: relative names from the plan's folder; its folder must exist and be
    /// writable, and it must not be a folder itself, all checked before anything is sent.
    package func saveTo(_ raw: Any?, at path: String) throws -> String? {
        guard let name = try json.string(raw, at: path) else { return nil }
        guard !name.isEmpty else { throw PlanError(file: file, path: path, message: "empty; expected a file name") }
        let full = name.hasPrefix("/") ? name : URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent(name).path
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: full, isDirectory: &isFolder), isFolder.boolValue {
            throw PlanError(file: file, path: path, message: "\(full) is a folder; expected a file name")
        }
        // Saving replaces what is there: a regular file or nothing (checked again at the answer), never the plan.
        do {
            try RequestOptions.checkDestination(full)
        } catch {
            throw PlanError(file: file, path: path, message: "\(error)")
        }
        if OutputFile.isSameFile(full, file) {
            throw PlanError(file: file, path: path, message: "\(full) is this plan's own file; saving there would replace the plan")
        }
        let folder = URL(fileURLWithPath: full).deletingLastPathComponent().path
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw PlanError(file: file, path: path, message: "the folder \(folder) does not exist")
        }
        guard FileManager.default.isWritableFile(atPath: folder) else {
            throw PlanError(file: file, path: path, message: "the folder \(folder) cannot be written")
        }
        return full
    }
}
