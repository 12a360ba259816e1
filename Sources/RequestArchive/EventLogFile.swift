import Foundation
import RequestEventFormat
import RequestOperations

/// Reads a recording in the JSON-lines event format.
public struct EventLogFile: Sendable {
    public var startedAt: Date?
    /// Whether the recording says its secrets were redacted (`nil` when it does not say).
    public var redacted: Bool?
    public var events: [RequestEvent]
    /// Set when the last line was cut off (a recording whose writer was killed): what was
    /// read stops before it.
    public var tornLastLine: Int?

    public init(startedAt: Date? = nil, redacted: Bool? = nil, events: [RequestEvent], tornLastLine: Int? = nil) {
        self.startedAt = startedAt
        self.redacted = redacted
        self.events = events
        self.tornLastLine = tornLastLine
    }

    /// Reads and checks a whole file. A torn last line is accepted and reported in
    /// ``tornLastLine``; any other bad line is an error naming the file and the line.
    public static func read(path: String) throws -> EventLogFile {
        try parse(ArchiveError.contents(of: path), file: path)
    }

    public static func parse(_ data: Data, file: String) throws -> EventLogFile {
        var bytes = data[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        let endsWithNewline = bytes.last == UInt8(ascii: "\n")
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        var result = EventLogFile(events: [])
        var sawHeader = false
        for (index, raw) in lines.enumerated() {
            let number = index + 1
            let isLast = index == lines.count - 1
            if raw.isEmpty || raw.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") }) { continue }
            guard let text = String(data: Data(raw), encoding: .utf8) else {
                throw ArchiveError(file: file, message: "line \(number): not UTF-8 text")
            }
            if !sawHeader {
                guard let object = try? JSONSerialization.jsonObject(with: Data(raw)) as? [String: Any],
                      object["event"] as? String == "session"
                else {
                    throw ArchiveError(file: file, message: "line \(number): expected the session header "
                                       + #"({"event":"session","version":1,...}); is this a reqtop recording?"#)
                }
                let version = (object["version"] as? NSNumber)?.intValue ?? 0
                guard version == EventLog.version else {
                    throw ArchiveError(file: file, message: "line \(number): version \(version) is not supported; this reqtop reads version \(EventLog.version)")
                }
                if let started = object["startedAt"] as? String {
                    result.startedAt = HARDate.parse(started)
                }
                result.redacted = object["redacted"] as? Bool
                sawHeader = true
                continue
            }
            do {
                if let event = try EventLog.parse(line: text, lineNumber: number) {
                    result.events.append(event)
                }
            } catch let error as EventLogError {
                // Only the very last line may be cut short, and only when the file does not
                // end with a newline: that is what a killed writer leaves.
                if isLast, !endsWithNewline {
                    result.tornLastLine = number
                    break
                }
                throw ArchiveError(file: file, message: error.description)
            }
        }
        guard sawHeader else { throw ArchiveError(file: file, message: "empty: no session header, no events") }
        return result
    }
}
