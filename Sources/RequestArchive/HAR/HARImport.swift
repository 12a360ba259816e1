import Foundation
import RequestOperations

/// Reads HAR 1.2 as real tools write it (Chrome, Firefox, Safari, Charles, Insomnia,
/// mitmproxy): a byte order mark, no `pages`, missing optional fields, −1 timings, status 0
/// or −1 for failed requests, base64 bodies. Each entry becomes an operation on the
/// session's timeline; entries reqtop wrote itself carry their own events in `_reqtop` and
/// give them back as they were.
///
/// A file that is not JSON, not HAR, or has a wrong type where HAR requires one is an
/// error naming the file and the JSON path of the problem.
public enum HARImport {
    public struct Result: Sendable {
        public var startedAt: Date?
        public var events: [RequestEvent]
        public var entryCount: Int
    }

    public static func read(path: String) throws -> Result {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ArchiveError(file: path, message: "cannot read the file (\((error as NSError).localizedDescription))")
        }
        return try parse(data, file: path)
    }

    public static func parse(_ data: Data, file: String) throws -> Result {
        var bytes = data
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: bytes)
        } catch {
            let detail = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? "\(error)"
            throw ArchiveError(file: file, message: "not valid JSON (\(detail))")
        }
        let reader = Reader(file: file)
        let top = try reader.object(root, "$", "a HAR object {\"log\": {...}}")
        let log = try reader.object(top["log"], "$.log", "an object with \"entries\"")
        let entries = try reader.array(log["entries"], "$.log.entries", "an array of entries")

        struct Parsed {
            var index: Int
            var start: Date
            var object: [String: Any]
        }
        var parsed: [Parsed] = []
        for (index, raw) in entries.enumerated() {
            let path = "$.log.entries[\(index)]"
            let entry = try reader.object(raw, path, "an entry object")
            let started = try reader.string(entry["startedDateTime"], "\(path).startedDateTime", "an ISO 8601 date")
            guard let start = HARDate.parse(started) else {
                throw ArchiveError(file: file, message: "\(path).startedDateTime: \"\(started)\" is not an ISO 8601 date")
            }
            parsed.append(Parsed(index: index, start: start, object: entry))
        }
        let origin = parsed.map(\.start).min()
        var events: [RequestEvent] = []
        // For reqtop's own entries: the session's start, from an entry's date and its events.
        var sessionStart: Date?
        for item in parsed.sorted(by: { ($0.start, $0.index) < ($1.start, $1.index) }) {
            let path = "$.log.entries[\(item.index)]"
            if let own = item.object["_reqtop"] as? [String: Any], let recorded = own["events"] as? [Any], !recorded.isEmpty {
                for (number, value) in recorded.enumerated() {
                    guard let data = try? JSONSerialization.data(withJSONObject: value),
                          let line = String(data: data, encoding: .utf8),
                          let event = try? EventLog.parse(line: line, lineNumber: number + 1)
                    else {
                        throw ArchiveError(file: file, message: "\(path)._reqtop.events[\(number)]: not a reqtop event")
                    }
                    events.append(event)
                }
                if sessionStart == nil, let started = events.last(where: { $0.payload.name == "started" }) ?? events.last {
                    sessionStart = item.start.addingTimeInterval(-started.time)
                }
                continue
            }
            events += try synthesize(item.object, path: path, id: "entry-\(item.index + 1)",
                                     offset: item.start.timeIntervalSince(origin ?? item.start), reader: reader)
        }
        events.sort { $0.time < $1.time }
        // Other tools' entries are placed from the earliest one, which starts the session.
        let startedAt = sessionStart ?? origin
        return Result(startedAt: startedAt, events: events, entryCount: entries.count)
    }

    /// The events an entry from another tool stands for: queued, started, task created,
    /// response, data, completion, finished, placed by its timings.
    private static func synthesize(_ entry: [String: Any], path: String, id: String, offset: TimeInterval,
                                   reader: Reader) throws -> [RequestEvent] {
        let request = try reader.object(entry["request"], "\(path).request", "an object")
        let method = try reader.string(request["method"], "\(path).request.method", "a string")
        let url = try reader.string(request["url"], "\(path).request.url", "a string")
        let requestHeaders = try reader.headers(request["headers"], "\(path).request.headers")
        let response = try reader.object(entry["response"], "\(path).response", "an object")
        let status = try reader.number(response["status"], "\(path).response.status", "a number") ?? 0
        let responseHeaders = try reader.headers(response["headers"], "\(path).response.headers")
        var size = 0.0
        if let content = response["content"] {
            let object = try reader.object(content, "\(path).response.content", "an object")
            size = try reader.number(object["size"], "\(path).response.content.size", "a number") ?? 0
        }
        let bodySize = try reader.number(response["bodySize"], "\(path).response.bodySize", "a number") ?? -1
        let bytes = Int(max(0, size, bodySize))

        func phase(_ name: String) throws -> Double {
            guard let timings = entry["timings"] else { return 0 }
            let object = try reader.object(timings, "\(path).timings", "an object")
            return max(0, try reader.number(object[name], "\(path).timings.\(name)", "a number") ?? 0) / 1000
        }
        let before = try phase("blocked") + phase("dns") + phase("connect") + phase("ssl")
        let send = try phase("send"), wait = try phase("wait"), receive = try phase("receive")
        let total = max(before + send + wait + receive, (try reader.number(entry["time"], "\(path).time", "a number") ?? 0) / 1000)

        let failed = status <= 0
        let code = Int(status)
        var events = [
            RequestEvent(time: offset, operationID: id, attempt: 1, payload: .queued(method: method, url: url, headers: requestHeaders, maxAttempts: nil)),
            RequestEvent(time: offset, operationID: id, attempt: 1, payload: .started),
            RequestEvent(time: offset + before, operationID: id, attempt: 1, payload: .taskCreated(taskIdentifier: 0, url: url)),
        ]
        if !failed {
            events.append(RequestEvent(time: offset + before + send + wait, operationID: id, attempt: 1,
                                       payload: .response(status: code, headers: responseHeaders, expectedBytes: size > 0 ? Int(size) : nil)))
            if bytes > 0 {
                events.append(RequestEvent(time: offset + total, operationID: id, attempt: 1, payload: .data(bytes: bytes)))
            }
        }
        let message = (entry["_error"] as? String) ?? (failed ? "no response" : nil)
        events.append(RequestEvent(time: offset + total, operationID: id, attempt: 1,
                                   payload: .taskCompleted(error: failed ? TransportError(code: -1, message: message ?? "") : nil)))
        let outcome: RequestOutcome = !failed && code < 400 ? .success : .failure
        events.append(RequestEvent(time: offset + total, operationID: id, attempt: 1,
                                   payload: .finished(outcome: outcome, status: failed ? nil : code, attempts: 1, duration: total,
                                                      reason: failed ? message : (code >= 400 ? "status \(code)" : nil))))
        return events
    }

    /// Typed access with errors that name the JSON path.
    struct Reader {
        let file: String

        func fail(_ path: String, _ expected: String, _ value: Any?) -> ArchiveError {
            ArchiveError(file: file, message: value == nil || value is NSNull
                ? "\(path): missing; expected \(expected)"
                : "\(path): expected \(expected), found \(describe(value!))")
        }

        func object(_ value: Any?, _ path: String, _ expected: String) throws -> [String: Any] {
            guard let object = value as? [String: Any] else { throw fail(path, expected, value) }
            return object
        }

        func array(_ value: Any?, _ path: String, _ expected: String) throws -> [Any] {
            guard let array = value as? [Any] else { throw fail(path, expected, value) }
            return array
        }

        func string(_ value: Any?, _ path: String, _ expected: String) throws -> String {
            guard let string = value as? String else { throw fail(path, expected, value) }
            return string
        }

        /// `nil` when absent; an error when present with another type.
        func number(_ value: Any?, _ path: String, _ expected: String) throws -> Double? {
            guard let value, !(value is NSNull) else { return nil }
            guard let number = value as? NSNumber, number.objCType.pointee != 99 else { throw fail(path, expected, value) }
            return number.doubleValue
        }

        func headers(_ value: Any?, _ path: String) throws -> [String: String] {
            guard let value, !(value is NSNull) else { return [:] }
            let list = try array(value, path, "an array of {\"name\", \"value\"}")
            var out: [String: String] = [:]
            for (index, item) in list.enumerated() {
                let pair = try object(item, "\(path)[\(index)]", "an object with \"name\" and \"value\"")
                out[try string(pair["name"], "\(path)[\(index)].name", "a string")] = (pair["value"] as? String) ?? ""
            }
            return out
        }

        func describe(_ value: Any) -> String {
            switch value {
            case is String: "a string"
            case let number as NSNumber: number.objCType.pointee == 99 ? "a boolean" : "a number"
            case is [Any]: "an array"
            case is [String: Any]: "an object"
            default: "\(type(of: value))"
            }
        }
    }
}
