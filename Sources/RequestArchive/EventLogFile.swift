import Foundation
import RequestEventFormat
import RequestOperations

/// Reads a recording in the JSON-lines event format.
public struct EventLogFile: Sendable {
    public var startedAt: Date?
    /// Whether the recording says its secrets were redacted (`nil` when it does not say).
    public var redacted: Bool?
    /// The queue's settings the header gives (a JSON object's text, in plan terms), if any.
    public var settings: String?
    /// In a what-if run's recording: each of its servers' `host:port` → the recorded
    /// upstream's it stood for (the header's `origins`). Empty otherwise.
    public var origins: [String: String] = [:]
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
        var lines = EventLogLines(file: file)
        var events: [RequestEvent] = []
        let bomLength = data.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        let endsWithNewline = data.count > bomLength && data.last == UInt8(ascii: "\n")
        // Lines are found with memchr and handed to the JSON parser as they are (a generic
        // split and a String per line were a third of the time of reading 1M events).
        try data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            guard let base = buffer.baseAddress else { return }
            var start = bomLength
            while start <= buffer.count {
                let rest = buffer.count - start
                let newline = rest == 0 ? nil : memchr(base + start, Int32(UInt8(ascii: "\n")), rest)
                let end = newline.map { $0 - UnsafeMutableRawPointer(mutating: base) } ?? buffer.count
                defer { start = end + 1 }
                let isLast = newline == nil
                if let event = try lines.take(UnsafeRawBufferPointer(rebasing: buffer[start..<end]), isLast: isLast, endsWithNewline: endsWithNewline) {
                    events.append(event)
                }
                if isLast || lines.tornLastLine != nil { break }
            }
        }
        try lines.finish()
        var file = EventLogFile(startedAt: lines.startedAt, redacted: lines.redacted, events: events, tornLastLine: lines.tornLastLine)
        file.settings = lines.settings
        file.origins = lines.origins
        return file
    }

    /// Whether `bytes` are UTF-8: ASCII (nearly every line) is checked eight bytes at a time,
    /// anything else by decoding.
    static func isUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index + 8 <= bytes.count {
            if bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { break }
            index += 8
        }
        while index < bytes.count, bytes[index] < 0x80 { index += 1 }
        if index == bytes.count { return true }
        return String(validating: bytes, as: UTF8.self) != nil
    }
}
