import Foundation
import RequestArchive
import RequestOperations

/// A problem with a plan: the file, where in it (a JSON path such as `requests[2].url`),
/// and what was expected.
struct PlanError: Error, Equatable, CustomStringConvertible {
    var file: String
    var path: String
    var message: String

    var description: String {
        path.isEmpty ? "\(file): \(message)" : "\(file): \(path): \(message)"
    }
}

/// Reads a plan file strictly: every field is checked, unknown fields are errors (a typo
/// such as `maxAttemps` must not silently fall back to a default), and each error names
/// its place in the file.
struct PlanParser {
    let file: String

    static let methods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]
    private static let planKeys: Set<String> = ["requests", "retry", "timeout", "deadline", "maxConcurrent"]
    private static let requestKeys: Set<String> = ["id", "method", "url", "headers", "body", "retry", "timeout", "deadline"]
    private static let retryKeys: Set<String> = ["maxAttempts", "baseDelay", "multiplier", "maxDelay", "jitter", "retryNonIdempotent", "retryBudget"]

    static func load(path: String) throws -> Plan {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw PlanError(file: path, path: "", message: "cannot read the file (\(ArchiveError.describe(readError: error)))")
        }
        return try PlanParser(file: path).parse(data)
    }

    func parse(_ data: Data) throws -> Plan {
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw PlanError(file: file, path: "", message: "not valid JSON (\(Self.describe(jsonError: error, in: data)))")
        }
        guard let object = root as? [String: Any] else {
            throw PlanError(file: file, path: "", message: "expected a JSON object with a \"requests\" array, found \(Self.kind(root))")
        }
        try checkKeys(object, allowed: Self.planKeys, at: "")

        let retry = try retrySettings(object["retry"], base: RetrySettings(), at: "retry")
        let timeout = try seconds(object["timeout"], at: "timeout")
        let deadline = try seconds(object["deadline"], at: "deadline") ?? 300
        let maxConcurrent = try integer(object["maxConcurrent"], at: "maxConcurrent", minimum: 1) ?? 6

        guard let list = object["requests"] else {
            throw PlanError(file: file, path: "requests", message: "missing; expected an array of requests")
        }
        guard let requests = list as? [Any] else {
            throw PlanError(file: file, path: "requests", message: "expected an array of requests, found \(Self.kind(list))")
        }
        guard !requests.isEmpty else {
            throw PlanError(file: file, path: "requests", message: "empty; expected at least one request")
        }
        var planned: [PlannedRequest] = []
        var seen: [String: Int] = [:]
        for (index, item) in requests.enumerated() {
            let request = try plannedRequest(item, index: index, retry: retry, timeout: timeout, deadline: deadline)
            if let first = seen[request.id] {
                throw PlanError(file: file, path: "requests[\(index)].id",
                                message: "\"\(request.id)\" is already the id of requests[\(first)]; ids must be unique")
            }
            seen[request.id] = index
            planned.append(request)
        }
        return Plan(maxConcurrent: maxConcurrent, requests: planned)
    }

    private func plannedRequest(_ item: Any, index: Int, retry: RetrySettings, timeout: TimeInterval?,
                                deadline: TimeInterval) throws -> PlannedRequest {
        let at = "requests[\(index)]"
        guard let object = item as? [String: Any] else {
            throw PlanError(file: file, path: at, message: "expected an object with at least \"url\", found \(Self.kind(item))")
        }
        try checkKeys(object, allowed: Self.requestKeys, at: at)

        let id = try string(object["id"], at: "\(at).id") ?? "req-\(index + 1)"
        guard !id.isEmpty else { throw PlanError(file: file, path: "\(at).id", message: "empty; expected a non-empty string") }

        let method = (try string(object["method"], at: "\(at).method") ?? "GET")
        guard Self.methods.contains(method.uppercased()) else {
            throw PlanError(file: file, path: "\(at).method",
                            message: "unknown method \"\(method)\"; expected one of \(Self.methods.sorted().joined(separator: ", "))")
        }

        guard let urlText = try string(object["url"], at: "\(at).url") else {
            throw PlanError(file: file, path: "\(at).url", message: "missing; expected an absolute http or https URL")
        }
        let checkable = urlText.replacingOccurrences(of: Plan.faultServerPlaceholder, with: "http://127.0.0.1:1")
        guard let url = URL(string: checkable), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              url.host?.isEmpty == false
        else {
            throw PlanError(file: file, path: "\(at).url", message: "\"\(urlText)\" is not an absolute http or https URL")
        }

        var headers: [String: String] = [:]
        if let raw = object["headers"] {
            guard let dictionary = raw as? [String: Any] else {
                throw PlanError(file: file, path: "\(at).headers", message: "expected an object of header names to strings, found \(Self.kind(raw))")
            }
            for (name, value) in dictionary {
                guard let text = value as? String else {
                    throw PlanError(file: file, path: "\(at).headers.\(name)", message: "expected a string, found \(Self.kind(value))")
                }
                headers[name] = text
            }
        }

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
                throw PlanError(file: file, path: "\(at).body", message: "expected a string, an object or an array, found \(Self.kind(raw))")
            }
        }

        return PlannedRequest(id: id, method: method.uppercased(), url: urlText, headers: headers, body: body,
                              retry: try retrySettings(object["retry"], base: retry, at: "\(at).retry"),
                              attemptTimeout: try seconds(object["timeout"], at: "\(at).timeout") ?? timeout,
                              deadline: try seconds(object["deadline"], at: "\(at).deadline") ?? deadline)
    }

    private func retrySettings(_ raw: Any?, base: RetrySettings, at: String) throws -> RetrySettings {
        guard let raw else { return base }
        guard let object = raw as? [String: Any] else {
            throw PlanError(file: file, path: at, message: "expected an object, found \(Self.kind(raw))")
        }
        try checkKeys(object, allowed: Self.retryKeys, at: at)
        var settings = base
        if let value = try integer(object["maxAttempts"], at: "\(at).maxAttempts", minimum: 1) { settings.maxAttempts = value }
        if let value = try seconds(object["baseDelay"], at: "\(at).baseDelay") { settings.baseDelay = value }
        if let value = try number(object["multiplier"], at: "\(at).multiplier") {
            guard value >= 1 else { throw PlanError(file: file, path: "\(at).multiplier", message: "\(value) is less than 1; expected a number of at least 1") }
            settings.multiplier = value
        }
        if let value = try seconds(object["maxDelay"], at: "\(at).maxDelay") { settings.maxDelay = value }
        if let raw = object["jitter"] {
            let names = Jitter.allCases.map(\.rawValue)
            guard let name = raw as? String, let jitter = Jitter(rawValue: name) else {
                throw PlanError(file: file, path: "\(at).jitter", message: "expected one of \(names.joined(separator: ", ")), found \(Self.describe(raw))")
            }
            settings.jitter = jitter
        }
        if let raw = object["retryNonIdempotent"] {
            guard let flag = raw as? Bool, Self.isBool(raw) else {
                throw PlanError(file: file, path: "\(at).retryNonIdempotent", message: "expected true or false, found \(Self.describe(raw))")
            }
            settings.retryNonIdempotent = flag
        }
        if object.keys.contains("retryBudget") {
            settings.retryBudget = object["retryBudget"] is NSNull ? nil : try seconds(object["retryBudget"], at: "\(at).retryBudget")
        }
        return settings
    }

    // MARK: - Field readers

    private func checkKeys(_ object: [String: Any], allowed: Set<String>, at: String) throws {
        for key in object.keys.sorted() where !allowed.contains(key) {
            let path = at.isEmpty ? key : "\(at).\(key)"
            let suggestion = allowed.first { $0.lowercased() == key.lowercased() || Self.closeEnough($0, key) }
            throw PlanError(file: file, path: path, message: "unknown field" + (suggestion.map { " (did you mean \"\($0)\"?)" } ?? "")
                                + "; expected one of \(allowed.sorted().joined(separator: ", "))")
        }
    }

    private func string(_ raw: Any?, at path: String) throws -> String? {
        guard let raw, !(raw is NSNull) else { return nil }
        guard let text = raw as? String else {
            throw PlanError(file: file, path: path, message: "expected a string, found \(Self.describe(raw))")
        }
        return text
    }

    private func number(_ raw: Any?, at path: String) throws -> Double? {
        guard let raw, !(raw is NSNull) else { return nil }
        guard let number = raw as? NSNumber, !Self.isBool(raw), number.doubleValue.isFinite else {
            throw PlanError(file: file, path: path, message: "expected a number, found \(Self.describe(raw))")
        }
        return number.doubleValue
    }

    private func seconds(_ raw: Any?, at path: String) throws -> TimeInterval? {
        guard let value = try number(raw, at: path) else { return nil }
        guard value >= 0 else {
            throw PlanError(file: file, path: path, message: "\(Self.describe(raw!)) is negative; expected a number of seconds, 0 or more")
        }
        return value
    }

    private func integer(_ raw: Any?, at path: String, minimum: Int) throws -> Int? {
        guard let value = try number(raw, at: path) else { return nil }
        guard value == value.rounded(), value >= Double(minimum), value <= Double(Int32.max) else {
            throw PlanError(file: file, path: path, message: "expected a whole number of at least \(minimum), found \(Self.describe(raw!))")
        }
        return Int(value)
    }

    // MARK: - Describing values

    static func isBool(_ value: Any) -> Bool {
        EventLog.isJSONBoolean(value)
    }

    static func kind(_ value: Any) -> String {
        switch value {
        case is NSNull: "null"
        case is String: "a string"
        case _ where isBool(value): "a boolean"
        case is NSNumber: "a number"
        case is [Any]: "an array"
        case is [String: Any]: "an object"
        default: "\(type(of: value))"
        }
    }

    static func describe(_ value: Any) -> String {
        switch value {
        case let text as String: "\"\(text)\""
        case _ where isBool(value): (value as? Bool) == true ? "true" : "false"
        case let number as NSNumber: "\(number)"
        default: kind(value)
        }
    }

    /// JSONSerialization's message, with "around character N" turned into a line and column.
    static func describe(jsonError error: Error, in data: Data) -> String {
        let nsError = error as NSError
        var message = (nsError.userInfo[NSDebugDescriptionErrorKey] as? String) ?? nsError.localizedDescription
        if let range = message.range(of: #"around character (\d+)"#, options: .regularExpression),
           let offset = Int(message[range].split(separator: " ").last ?? "") {
            let prefix = data.prefix(offset)
            let line = prefix.filter { $0 == UInt8(ascii: "\n") }.count + 1
            let column = offset - (prefix.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0) + 1
            message.replaceSubrange(range, with: "at line \(line), column \(column)")
        }
        if message.hasSuffix(".") { message.removeLast() }
        return message.prefix(1).lowercased() + message.dropFirst()
    }

    /// One edit apart (a typo), for "did you mean".
    static func closeEnough(_ a: String, _ b: String) -> Bool {
        let a = Array(a.lowercased()), b = Array(b.lowercased())
        guard abs(a.count - b.count) <= 1 else { return false }
        var previous = Array(0...b.count)
        for i in 1...max(1, a.count) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count] <= 1
    }
}
