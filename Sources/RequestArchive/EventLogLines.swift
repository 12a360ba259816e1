import Foundation
import RequestEventFormat
import RequestOperations

/// What every reader of a recording does with one line, whether it holds the whole file
/// (``EventLogFile/parse(_:file:)``) or reads it piece by piece (``EventLogStream``): the
/// session header first, blank lines skipped, UTF-8 checked, each event line read, and a bad
/// line named by its number. Only the last line of a file that does not end with a newline
/// may be cut short (what a killed writer leaves); such a line ends the reading quietly.
struct EventLogLines {
    let file: String
    private(set) var startedAt: Date?
    private(set) var redacted: Bool?
    /// The header's `settings`, as JSON text.
    private(set) var settings: String?
    /// The header's `origins`: a what-if run's servers → the recorded upstreams.
    private(set) var origins: [String: String] = [:]
    private(set) var sawHeader = false
    /// The number of the last line taken.
    private(set) var number = 0
    /// Set when the last line was cut off.
    private(set) var tornLastLine: Int?

    /// The longest line a recording may have: 64 MiB. The writer keeps to it (a body of up to
    /// ``EventLogWriter/maxBodyCap`` in base64 is about 43 MiB; a line that would pass it
    /// anyway has its body left out, said so), so what reqtop records it always reads back.
    /// A longer line is another kind of file (a HAR named `.jsonl` of 100 MB is one line),
    /// refused rather than parsed.
    static let maxLineBytes = 64 << 20

    init(file: String) {
        self.file = file
    }

    /// The error for line `number` longer than ``maxLineBytes``.
    static func tooLong(file: String, line number: Int) -> ArchiveError {
        ArchiveError(file: file, message: "line \(number) is longer than \(maxLineBytes >> 20) MiB, the most a recording's line may be: "
                     + "is this a reqtop recording? (a HAR file must end in .har)")
    }

    /// Reads line `number + 1`. `isLast`: nothing follows it in the file; `endsWithNewline`:
    /// the file's last byte is a newline. Returns the event, nil for the header or a blank line.
    mutating func take(_ line: UnsafeRawBufferPointer, isLast: Bool, endsWithNewline: Bool) throws -> RequestEvent? {
        number += 1
        guard line.count <= Self.maxLineBytes else { throw Self.tooLong(file: file, line: number) }
        if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") }) { return nil }
        guard EventLogFile.isUTF8(line) else {
            throw ArchiveError(file: file, message: "line \(number): not UTF-8 text")
        }
        let lineData = Data(line)
        guard sawHeader else {
            try readHeader(lineData)
            return nil
        }
        do {
            return try EventLog.parse(lineData: lineData, lineNumber: number)
        } catch let error as EventLogError {
            if isLast, !endsWithNewline {
                tornLastLine = number
                return nil
            }
            throw ArchiveError(file: file, message: error.description)
        }
    }

    /// After the last line: a file with no header is not a recording.
    func finish() throws {
        guard sawHeader else { throw ArchiveError(file: file, message: "empty: no session header, no events") }
    }

    /// A header value as it is shown in a message: a string quoted and cut at 40 characters.
    private static func shown(_ value: Any) -> String {
        guard let text = value as? String else { return "\(value)" }
        return "'" + (text.count > 40 ? text.prefix(40) + "…" : text) + "'"
    }

    private mutating func readHeader(_ lineData: Data) throws {
        guard let object = try? JSONSerialization.jsonObject(with: lineData) as? [String: Any],
              object["event"] as? String == "session"
        else {
            throw ArchiveError(file: file, message: "line \(number): expected the session header "
                               + #"({"event":"session","version":1,...}); is this a reqtop recording?"#)
        }
        let version = (object["version"] as? NSNumber)?.intValue ?? 0
        guard version == EventLog.version else {
            throw ArchiveError(file: file, message: "line \(number): version \(version) is not supported; this reqtop reads version \(EventLog.version)")
        }
        if let started = object["startedAt"] {
            // A date that cannot be read is said, never replaced: an export would give every
            // request the day it was exported instead (HAR's startedDateTime, a trace's times).
            guard let text = started as? String, let date = HARDate.parse(text) else {
                throw ArchiveError(file: file, message: "line \(number): startedAt \(Self.shown(started)) is not a date and time as recordings write it "
                                   + "(2026-11-22T10:00:00.000Z)")
            }
            startedAt = date
        }
        redacted = object["redacted"] as? Bool
        if let object = object["settings"] as? [String: Any], let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
            settings = String(decoding: data, as: UTF8.self)
        }
        origins = (object["origins"] as? [String: Any])?.compactMapValues { $0 as? String } ?? [:]
        sawHeader = true
    }
}
