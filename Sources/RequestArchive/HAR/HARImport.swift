import Foundation
import RequestEventFormat
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
    /// Request bodies (`postData`) up to this size are read whole, as a live session's
    /// events carry them.
    static let bodyLimit = EventHub.defaultBodyLimit
    public struct Result: Sendable {
        public var startedAt: Date?
        public var events: [RequestEvent]
        /// Entries imported.
        public var entryCount: Int
        /// Entries left out, each with the JSON path of its problem
        /// (`$.log.entries[17].response.status: expected a number, found a string`).
        public var skipped: [String] = []
        /// Set when the file is a HAR reqtop was writing when it was killed: read up to its
        /// last whole entry.
        public var torn = false
        /// For a recording reqtop wrote as it ran (`--record FILE.har`): whether it ended
        /// cleanly; false when the process was killed (or the disk filled) first, so
        /// operations in flight then are not in it. Nil for other HAR files, which cannot tell.
        public var endedCleanly: Bool?
        /// Entries of other tools that gave a header's value as an array of strings (read as
        /// the header repeated, its values joined with ", " as a live response's are).
        public var multiValuedHeaders = 0
        /// Per operation of another tool's entry: what the events cannot hold (header order,
        /// cookies), for ``HARExport`` to give back.
        public var shapes: [String: HAREntryShape] = [:]
        /// Fields not as HAR 1.2 shapes them, which reqtop does not need to replay an entry and
        /// read around (kept as given for export where it writes them): each path, what it was
        /// instead, and in how many entries. Said once by the command.
        public var otherShapes: [(path: String, found: String, entries: Int)] = []
    }

    /// A HAR that ``HARRecorder`` was writing when the process was killed: its header line,
    /// whole entry lines, and a last line cut short. Gives the document up to the last
    /// whole entry, or nil when the bytes are not such a file.
    static func mendTorn(_ bytes: Data) -> Data? {
        guard let header = [HARRecorder.header, HARRecorder.legacyHeader].map({ Data($0.utf8) }).first(where: { bytes.starts(with: $0) }) else {
            return nil
        }
        var kept: [Data] = []
        for line in bytes.dropFirst(header.count).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            var entry = Data(line)
            if entry.last == UInt8(ascii: ",") { entry.removeLast() }
            guard (try? JSONSerialization.jsonObject(with: entry)) is [String: Any] else { break }
            kept.append(entry)
        }
        return header + kept.joined(separator: Data(",\n".utf8)) + Data(HARRecorder.closing.utf8)
    }

    /// The JSON inside a JSONP file (HARP: `onInputData({...});`, as Firebug's NetExport
    /// writes it and harviewer reads it); any other bytes as they are.
    static func unwrapJSONP(_ bytes: Data) -> Data {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), bytes[first] != UInt8(ascii: "{") else { return bytes }
        // An identifier (letters, digits, _ $ .), then "(".
        var index = first
        while index < bytes.endIndex, let byte = Optional(bytes[index]),
              (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x5F || byte == 0x24 || byte == 0x2E {
            index += 1
        }
        guard index > first, index < bytes.endIndex, bytes[index] == UInt8(ascii: "(") else { return bytes }
        // The last ")" (an optional ";" and spaces after it).
        guard let close = bytes.lastIndex(of: UInt8(ascii: ")")), close > index,
              bytes[(close + 1)...].allSatisfy({ isSpace($0) || $0 == UInt8(ascii: ";") }) else { return bytes }
        return bytes[(index + 1)..<close]
    }

    /// Reads a HAR file. An entry that cannot be read is left out and named in
    /// ``Result/skipped``; with `strict`, it is an error, as a file that is not HAR is.
    /// Another tool's entries are redacted as a live session's events are (a `Set-Cookie`,
    /// an `Authorization`, a secret-named query value or body field): one rule for every
    /// source; `redact: false` keeps them as the file has them.
    public static func read(path: String, strict: Bool = false, redact: Bool = true) throws -> Result {
        try parse(ArchiveError.contents(of: path), file: path, strict: strict, redact: redact)
    }

    /// - Parameter split: decode the entries a slice per core (`HARSplitDecoder`), with the
    ///   same result; nil: when the file is 8 MiB or more.
    public static func parse(_ data: Data, file: String, strict: Bool = false, split: Bool? = nil, redact: Bool = true) throws -> Result {
        try parse(data, file: file, strict: strict, split: split ?? (data.count >= HARSplitDecoder.threshold), slices: nil, redact: redact)
    }

    /// Whether a recording reqtop wrote as it ran ends with the closing line of a clean end
    /// (nil: another tool's file, or one made before the end was marked).
    static func endedCleanly(_ bytes: Data, torn: Bool) -> Bool? {
        guard bytes.starts(with: Data(HARRecorder.header.utf8)) else { return nil }
        guard !torn else { return false }
        let marker = Data(HARRecorder.completeClosing.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        var end = bytes.endIndex
        while end > bytes.startIndex, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[end - 1]) { end -= 1 }
        return bytes[..<end].suffix(marker.count).elementsEqual(marker)
    }

    static func parse(_ data: Data, file: String, strict: Bool, split: Bool, slices: Int?, redact: Bool = true) throws -> Result {
        var bytes = data
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        bytes = unwrapJSONP(bytes)
        let har: HARFile
        var torn = false
        // Four slices a core: entries differ in size, and a core that finishes its slice early
        // takes another (two slices on two cores took 590 and 760 ms; eight, 630–730 ms in all).
        let slices = split ? max(1, slices ?? ProcessInfo.processInfo.activeProcessorCount * 4) : 1
        // One walk of the structure for both readers: the rules they share, and for the split
        // reader where the entries are.
        var located: HAREntriesLocator.Found?
        switch bytes.withUnsafeBytes({ HAREntriesLocator.locate($0) }) {
        case .refused(let reason): throw ArchiveError(file: file, message: reason)
        case .found(let found): located = found
        case .wholeFile: break
        }
        if split, let located, let entries = HARSplitDecoder.decodeEntries(bytes, found: located, slices: slices) {
            har = HARFile(log: HARLog(entries: entries))
        } else {
            do {
                do {
                    har = try JSONDecoder().decode(HARFile.self, from: bytes)
                } catch DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty {
                    // Not JSON: perhaps a HAR reqtop was writing when it was killed.
                    guard let mended = mendTorn(bytes) else { throw DecodingError.dataCorrupted(context) }
                    har = try JSONDecoder().decode(HARFile.self, from: mended)
                    torn = true
                }
            } catch let error as DecodingError {
                if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                    // JSONDecoder does not say where; JSONSerialization does (only on this path).
                    do {
                        _ = try JSONSerialization.jsonObject(with: bytes)
                    } catch {
                        // Said as the plan parser says it: a line and a column.
                        throw ArchiveError(file: file, message: "not valid JSON (\(StrictJSONReader.describe(jsonError: error, in: Data(bytes))))")
                    }
                }
                var found: JSONKind?
                if case .typeMismatch(_, let context) = error { found = JSONKind.at(context.codingPath, in: Data(bytes)) }
                throw ArchiveError(file: file, message: HARDecodingError.message(error, found: found))
            }
        }

        // Each entry is checked whole before any of it is used; a bad one is skipped and named.
        // Entries are independent: a large file's are checked, and made into events, a slice
        // of them per core.
        let checked = HARSplitDecoder.map(har.log.entries, slices: slices) { index, readable in check(readable, at: index, file: file) }
        var entries: [CheckedEntry] = []
        var skipped: [String] = []
        for outcome in checked {
            switch outcome {
            case .entry(let entry): entries.append(entry)
            case .skipped(let error):
                if strict { throw error }
                skipped.append(error.message)
            case .failed(let error): throw error
            }
        }
        // A date is input too: one entry dated 1970 among 2026's put every other event 1.8e9 s
        // into the session (past what a recording's `t` may be) and made a what-if wait out
        // the years between. An entry further than that from the middle of the rest is left out.
        if entries.count > 1 {
            let middle = entries.map(\.start).sorted()[entries.count / 2]
            let reach = JSONText.maxSeconds / 2
            for entry in entries where abs(entry.start.timeIntervalSince(middle)) > reach {
                let error = ArchiveError(file: file, message: "$.log.entries[\(entry.index)].startedDateTime: \(entry.entry.startedDateTime) is "
                                         + "\(Int(abs(entry.start.timeIntervalSince(middle)) / (86_400 * 365.25))) years from the other entries; left out")
                if strict { throw error }
                skipped.append(error.message)
            }
            entries.removeAll { abs($0.start.timeIntervalSince(middle)) > reach }
        }
        if entries.isEmpty, !skipped.isEmpty {
            throw ArchiveError(file: file, message: skipped.count == 1 ? skipped[0] : "none of its \(skipped.count) entries could be read; the first: \(skipped[0])")
        }
        let origin = entries.map(\.start).min()
        var events: [RequestEvent] = []
        // For reqtop's own entries: the session's start, from an entry's date and its events.
        var sessionStart: Date?
        let ordered = entries.sorted { ($0.start, $0.index) < ($1.start, $1.index) }
        let redactor = redact ? Redactor() : nil
        let synthesized = HARSplitDecoder.map(ordered, slices: slices) { _, item in
            guard item.recorded.isEmpty else { return [RequestEvent]() }
            let made = synthesize(item.entry, id: "entry-\(item.index + 1)", offset: item.start.timeIntervalSince(origin ?? item.start))
            return redactor.map { redactor in made.map(redactor.redact) } ?? made
        }
        events.reserveCapacity(synthesized.reduce(0) { $0 + $1.count } + ordered.reduce(0) { $0 + $1.recorded.count })
        for (item, made) in zip(ordered, synthesized) {
            let (start, recorded) = (item.start, item.recorded)
            if !recorded.isEmpty {
                events += recorded
                if sessionStart == nil, let started = events.last(where: { $0.payload.kind == .started }) ?? events.last {
                    sessionStart = start.addingTimeInterval(-started.time)
                }
                continue
            }
            events += made
        }
        events.sort { $0.time < $1.time }
        // Other tools' entries are placed from the earliest one, which starts the session.
        var result = Result(startedAt: sessionStart ?? origin, events: events, entryCount: entries.count, skipped: skipped, torn: torn)
        result.endedCleanly = endedCleanly(bytes, torn: torn)
        var otherShapes: [String: (found: String, entries: Int)] = [:]
        for item in ordered {
            for (path, found) in item.entry.otherShapes {
                otherShapes[path] = (otherShapes[path]?.found ?? found, (otherShapes[path]?.entries ?? 0) + 1)
            }
        }
        result.otherShapes = otherShapes.sorted { $0.key < $1.key }.map { ($0.key, $0.value.found, $0.value.entries) }
        for item in ordered where item.recorded.isEmpty {
            result.shapes["entry-\(item.index + 1)"] = HAREntryShape(item.entry)
            if ((item.entry.request.headers ?? []) + (item.entry.response.headers ?? [])).contains(where: \.multiValued) { result.multiValuedHeaders += 1 }
        }
        return result
    }

    struct CheckedEntry: Sendable {
        let index: Int
        let entry: HAREntry
        let start: Date
        /// reqtop's own events, when reqtop wrote the entry.
        let recorded: [RequestEvent]
    }

    enum Checked: Sendable {
        case entry(CheckedEntry)
        /// Left out (named in the result), or the error in strict mode.
        case skipped(ArchiveError)
        case failed(Error)
    }

    /// One entry checked whole before any of it is used.
    private static func check(_ readable: Readable<HAREntry>, at index: Int, file: String) -> Checked {
        do {
            let entry: HAREntry
            switch readable {
            case .read(let read): entry = read
            case .unreadable(let error, let found): throw ArchiveError(file: file, message: HARDecodingError.message(error, found: found))
            }
            try checkNumbers(entry, at: index, file: file)
            guard let start = HARDate.parse(entry.startedDateTime) else {
                throw ArchiveError(file: file, message: "$.log.entries[\(index)].startedDateTime: \"\(entry.startedDateTime)\" is not an ISO 8601 date")
            }
            var recorded: [RequestEvent] = []
            for (number, value) in (entry.reqtop?.events ?? []).enumerated() {
                func place() -> String { "$.log.entries[\(index)]._reqtop.events[\(number)]" }
                do {
                    guard let object = value.object as? [String: Any], let event = try EventLog.event(from: object, lineNumber: number) else {
                        throw ArchiveError(file: file, message: "\(place()): expected an event object")
                    }
                    recorded.append(event)
                } catch let error as EventLogError {
                    throw ArchiveError(file: file, message: "\(place()): \(error.message)")
                }
            }
            return .entry(CheckedEntry(index: index, entry: entry, start: start, recorded: recorded))
        } catch let error as ArchiveError {
            return .skipped(error)
        } catch {
            return .failed(error)
        }
    }

    /// HAR's numbers are checked where they are read, as the event reader checks its own, so
    /// nothing after has to convert a number beyond what it holds (a `time` or a `status`
    /// of 1e19 trapped the import).
    private static func checkNumbers(_ entry: HAREntry, at index: Int, file: String) throws {
        func refuse(_ field: String, _ expected: String, _ value: Double) -> ArchiveError {
            ArchiveError(file: file, message: "$.log.entries[\(index)].\(field): expected \(expected), found \(value)")
        }
        let status = entry.response.status
        guard status == status.rounded(), status >= -1, status <= 999 else {
            throw refuse("response.status", "a status from -1 to 999", status)
        }
        let sizes = [("response.content.size", entry.response.content?.size), ("response.bodySize", entry.response.bodySize)]
        for case let (field, value?) in sizes where !(value.isFinite && abs(value) <= JSONText.maxInteger) {
            throw refuse(field, "a byte count within ±2^53", value)
        }
        // Milliseconds; -1 means "does not apply".
        let maxMilliseconds = JSONText.maxSeconds * 1000
        func valid(_ value: Double) -> Bool { value.isFinite && value >= -1 && value <= maxMilliseconds }
        // Named only when one is out of range (the first, in the order of their names).
        guard valid(entry.time ?? 0), (entry.timings ?? [:]).values.allSatisfy(valid) else {
            let times = [("time", entry.time)] + (entry.timings ?? [:]).sorted { $0.key < $1.key }.map { ("timings.\($0.key)", Optional($0.value)) }
            for case let (field, value?) in times where !valid(value) {
                throw refuse(field, "milliseconds from -1 to \(Int(maxMilliseconds))", value)
            }
            return
        }
    }

    /// The events an entry from another tool stands for: queued, started, task created,
    /// response, data, completion, finished, placed by its timings.
    private static func synthesize(_ entry: HAREntry, id: String, offset: TimeInterval) -> [RequestEvent] {
        // A header given twice is one field with both values, as a live response's is
        // (``TransportResponse``): the last one no longer hides the first.
        func headers(_ list: [HARHeader]?) -> [String: String] {
            TransportResponse(url: URL(fileURLWithPath: "/"), statusCode: 0, httpVersion: "",
                              fields: (list ?? []).map { ($0.name, $0.value ?? "") }).headers
        }
        let status = entry.response.status
        let size = entry.response.content?.size ?? 0
        let bytes = Int(max(0, size, entry.response.bodySize ?? -1))
        func phase(_ name: String) -> Double { max(0, entry.timings?[name] ?? 0) / 1000 }
        let before = phase("blocked") + phase("dns") + phase("connect") + phase("ssl")
        let send = phase("send"), wait = phase("wait"), receive = phase("receive")
        let total = max(before + send + wait + receive, (entry.time ?? 0) / 1000)
        let (method, url) = (entry.request.method, entry.request.url)

        let failed = status <= 0
        let code = Int(status)
        var events = [
            RequestEvent(time: offset, operationID: id, attempt: 1, payload: .queued(method: method, url: url, headers: headers(entry.request.headers), maxAttempts: 1,
                                                                                  body: entry.request.postData?.body(limit: bodyLimit),
                                                                                  options: RecordedOptions.clientExchange)),
            RequestEvent(time: offset, operationID: id, attempt: 1, payload: .started),
            RequestEvent(time: offset + before, operationID: id, attempt: 1, payload: .taskCreated(taskIdentifier: 0, url: url)),
        ]
        // A tool that timed the send (browsers do) splits the attempt as reqtop's NIO transport does.
        if !failed, send > 0 {
            events.append(RequestEvent(time: offset + before + send, operationID: id, attempt: 1, payload: .sent))
        }
        if !failed {
            events.append(RequestEvent(time: offset + before + send + wait, operationID: id, attempt: 1,
                                       payload: .response(status: code, headers: headers(entry.response.headers), expectedBytes: size > 0 ? Int(size) : nil)))
            if bytes > 0 {
                events.append(RequestEvent(time: offset + total, operationID: id, attempt: 1, payload: .data(bytes: bytes)))
            }
            // The body the browser or proxy saved, as a recording carries it.
            if let (data, read) = entry.response.content?.body(limit: bodyLimit) {
                // The size the file gives is the body's (its text may be an encoding of it).
                let whole = size >= 0 && entry.response.content?.size != nil ? Int(size) : read
                events.append(RequestEvent(time: offset + total, operationID: id, attempt: 1,
                                           payload: .responseBody(body: .bytes(data), totalBytes: whole, truncated: data.count < whole,
                                                                  mediaType: entry.response.content?.mimeType.flatMap { $0.isEmpty ? nil : $0 })))
            }
        }
        let message = entry.error ?? (failed ? "no response" : nil)
        events.append(RequestEvent(time: offset + total, operationID: id, attempt: 1,
                                   payload: .taskCompleted(error: failed ? TransportError(code: -1, message: message ?? "") : nil)))
        let outcome: RequestOutcome = !failed && code < 400 ? .success : .failure
        events.append(RequestEvent(time: offset + total, operationID: id, attempt: 1,
                                   payload: .finished(outcome: outcome, status: failed ? nil : code, attempts: 1, duration: total,
                                                      reason: failed ? message : (code >= 400 ? "status \(code)" : nil))))
        return events
    }
}
