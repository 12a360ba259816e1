import Foundation
import RequestOperations

/// Reads a recording a piece at a time: each ``next(upTo:)`` returns the events of the next
/// stretch of the file, so a recording of any size is read in memory bounded by one piece
/// (1 MiB) and what the caller keeps. Lines are checked as ``EventLogFile`` checks them, with
/// the same messages; a torn last line ends the stream and is reported in ``tornLastLine``.
///
/// Regular files, pipes and devices are read alike (`replay <(zcat day.jsonl.gz)`).
public final class EventLogStream {
    public let file: String
    /// How much is read at a time (1 MiB; tests use less to cut lines across pieces).
    let pieceSize: Int
    private var lines: EventLogLines
    private let descriptor: Int32
    /// Bytes read but not yet split into lines (a line's start, waiting for its end).
    private var pending: [UInt8] = []
    /// Where the first line not yet taken starts in ``pending``.
    private var pendingStart = 0
    /// Whether ``pending`` may hold no whole line, so the next read needs another piece.
    private var needsMore = true
    private var reachedEnd = false
    /// A bad line met after some good ones in the same piece: thrown by the next ``next(upTo:)``.
    private var deferredError: Error?
    private var finished = false
    private var closed = false
    /// Events read past the header while looking for it (the header line is read at open).
    private var early: [RequestEvent] = []

    public var startedAt: Date? { lines.startedAt }
    public var redacted: Bool? { lines.redacted }
    /// The number of the line that was cut off at the end, once the stream has reached it.
    public var tornLastLine: Int? { lines.tornLastLine }
    /// Lines read so far.
    public var lineCount: Int { lines.number }

    /// Opens `path` and reads up to its session header; throws what ``EventLogFile/read(path:)``
    /// would for a missing file, a folder, or a file that is not a recording.
    public init(path: String, pieceSize: Int = 1 << 20) throws {
        _ = try InputFile.kind(of: path)
        file = path
        self.pieceSize = max(1, pieceSize)
        lines = EventLogLines(file: path)
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw ArchiveError(file: path, message: "cannot read the file (\(String(cString: strerror(errno))))")
        }
        do {
            while !lines.sawHeader, !finished { early += try readPiece() }
            try lines.finish()
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// The next events in file order (at least one), or nil at the end of the file.
    public func next(upTo limit: Int = 4096) throws -> [RequestEvent]? {
        if !early.isEmpty {
            defer { early = [] }
            return early
        }
        if let error = deferredError {
            deferredError = nil
            finished = true
            throw error
        }
        while !finished {
            let events = try readPiece(limit: limit)
            if !events.isEmpty { return events }
        }
        return nil
    }

    public func close() {
        guard !closed else { return }
        closed = true
        Foundation.close(descriptor)
    }

    /// Reads one more piece of the file when the bytes pending hold no whole line, then takes
    /// up to `limit` lines from them.
    private func readPiece(limit: Int = .max) throws -> [RequestEvent] {
        if needsMore, !reachedEnd { try fill() }
        var events: [RequestEvent] = []
        var consumed = pendingStart
        var lineLeft = true
        do { try pending.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            guard let base = buffer.baseAddress else {
                lineLeft = false
                return
            }
            while events.count < limit {
                guard consumed < buffer.count, let newline = memchr(base + consumed, Int32(UInt8(ascii: "\n")), buffer.count - consumed) else {
                    lineLeft = false
                    break
                }
                let end = newline - UnsafeMutableRawPointer(mutating: base)
                defer { consumed = end + 1 }
                if let event = try lines.take(UnsafeRawBufferPointer(rebasing: buffer[consumed..<end]), isLast: false, endsWithNewline: true) {
                    events.append(event)
                }
            }
            // A line longer than any recording's is refused as soon as it is, not read to its end.
            if !lineLeft, buffer.count - consumed > EventLogLines.maxLineBytes {
                throw EventLogLines.tooLong(file: file, line: lines.number + 1)
            }
            // At the end of the file what is left is its last line, with no newline after it.
            if !lineLeft, reachedEnd, consumed < buffer.count {
                if let event = try lines.take(UnsafeRawBufferPointer(rebasing: buffer[consumed...]), isLast: true, endsWithNewline: false) {
                    events.append(event)
                }
                consumed = buffer.count
            }
        } } catch {
            // The events before a bad line are handed over; the error comes with the next call.
            guard !events.isEmpty else { throw error }
            deferredError = error
            return events
        }
        pendingStart = consumed
        needsMore = !lineLeft
        if reachedEnd, !lineLeft { finished = true }
        return events
    }

    /// Appends the next piece of the file to what is pending (dropping what was taken).
    private func fill() throws {
        pending.removeFirst(pendingStart)
        pendingStart = 0
        let old = pending.count
        pending.append(contentsOf: repeatElement(0, count: pieceSize))
        var count = 0
        repeat {
            count = pending.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress! + old, pieceSize) }
        } while count < 0 && errno == EINTR
        guard count >= 0 else {
            pending.removeLast(pieceSize)
            throw ArchiveError(file: file, message: "cannot read the file (\(String(cString: strerror(errno))))")
        }
        pending.removeLast(pieceSize - count)
        if count == 0 { reachedEnd = true }
        if old == 0, lines.number == 0, pending.starts(with: [0xEF, 0xBB, 0xBF]) { pendingStart = 3 }
    }
}
