import Foundation
import RequestOperations
import Synchronization

/// Where a replay's events come from, in the order they are played: all at hand (a HAR file,
/// a test) or read from a recording while it plays (`reqtop replay` of a JSON-lines file,
/// whose reader is in the command line's module).
public protocol ReplaySource: Sendable {
    /// Up to `limit` events after those already read; empty when none is ready yet (the
    /// reader has not got that far); nil when the recording has no more.
    func read(upTo limit: Int) -> [RequestEvent]?
    /// Starts again from the first event (seeking backwards replays from the start).
    func rewind()
    /// The latest event time read so far, and whether that is the end of the recording.
    var extent: (duration: TimeInterval, complete: Bool) { get }
    /// Why reading stopped before the end of the file (a bad line), for the header.
    var problem: String? { get }
}

extension ReplaySource {
    public var problem: String? { nil }
}

/// Events all at hand, played in time order (events with the same time keep their order).
public final class ReplayEvents: ReplaySource {
    private let events: [RequestEvent]
    private let position = Mutex(0)

    public init(_ events: [RequestEvent]) {
        self.events = events.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
    }

    public func read(upTo limit: Int) -> [RequestEvent]? {
        position.withLock { position in
            guard position < events.count else { return nil }
            let end = min(events.count, position + max(1, limit))
            defer { position = end }
            return Array(events[position..<end])
        }
    }

    public func rewind() {
        position.withLock { $0 = 0 }
    }

    public var extent: (duration: TimeInterval, complete: Bool) { (events.last?.time ?? 0, true) }
}
