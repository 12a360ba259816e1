import Foundation
import RequestArchive
import RequestMonitor
import RequestOperations
import Synchronization

/// A recording read while it plays: a thread reads the file ahead of the player, at most
/// ``readAhead`` events ahead, so the first screen comes at once and memory is bounded by
/// that and the monitor's model, not by the file. Going back re-reads from the start.
///
/// The outcomes for the summary are tallied the first time each event is read.
package final class StreamingReplaySource: ReplaySource {
    package static let readAhead = 65_536
    package static let batch = 4096

    private struct State {
        var ready: [[RequestEvent]] = []
        var readyCount = 0
        /// Bumped by each rewind; what a reader of an older one read is dropped.
        var generation = 0
        /// The reader reached the end of the file (this generation).
        var complete = false
        /// Events read in this generation, and the most read in any (the tallied ones).
        var readNow = 0
        var readMost = 0
        var duration: TimeInterval = 0
        var reachedEnd = false
        var error: ArchiveError?
        var tornLastLine: Int?
        var tally = SessionTally()
        var stopped = false
    }

    package let path: String
    private let state = Mutex(State())

    /// Starts reading `path` (whose header the command has checked) on a thread of its own.
    package init(path: String) {
        self.path = path
        let thread = Thread { [self] in readAhead() }
        thread.name = "reqtop.replay-reader"
        thread.start()
    }

    package func stop() {
        state.withLock { $0.stopped = true }
    }

    /// What was read, for the summary: the tally, whether the file was read to its end, a
    /// cut-off last line, an error that stopped the reading.
    package var outcome: (tally: SessionTally, reachedEnd: Bool, tornLastLine: Int?, error: ArchiveError?) {
        state.withLock { ($0.tally, $0.reachedEnd, $0.tornLastLine, $0.error) }
    }

    package func read(upTo limit: Int) -> [RequestEvent]? {
        state.withLock { state in
            guard !state.ready.isEmpty else { return state.complete ? nil : [] }
            var first = state.ready.removeFirst()
            if first.count > limit {
                state.ready.insert(Array(first[limit...]), at: 0)
                first.removeSubrange(limit...)
            }
            state.readyCount -= first.count
            return first
        }
    }

    package func rewind() {
        state.withLock { state in
            state.generation += 1
            state.ready = []
            state.readyCount = 0
            state.readNow = 0
            state.complete = false
        }
    }

    package var problem: String? {
        state.withLock { $0.error?.message }
    }

    package var extent: (duration: TimeInterval, complete: Bool) {
        state.withLock { ($0.duration, $0.reachedEnd) }
    }

    private func readAhead() {
        var stream: EventLogStream?
        var generation = -1
        while true {
            let (stopped, wanted, room) = state.withLock { ($0.stopped, $0.generation, $0.readyCount < Self.readAhead && !$0.complete) }
            if stopped { break }
            if wanted != generation {
                stream?.close()
                generation = wanted
                do {
                    stream = try EventLogStream(path: path)
                } catch {
                    finish(generation, error: error, torn: nil)
                    stream = nil
                }
                continue
            }
            guard room, let reader = stream else {
                Thread.sleep(forTimeInterval: 0.002)
                continue
            }
            do {
                if let events = try reader.next(upTo: Self.batch) {
                    state.withLock { state in
                        guard state.generation == generation else { return }
                        state.ready.append(events)
                        state.readyCount += events.count
                        // Tallied once: only events past the furthest any reading got.
                        let fresh = state.readNow + events.count - state.readMost
                        if fresh > 0 {
                            state.tally.add(Array(events.suffix(fresh)))
                            state.readMost += fresh
                            state.duration = max(state.duration, events.last?.time ?? 0)
                        }
                        state.readNow += events.count
                    }
                } else {
                    finish(generation, error: nil, torn: reader.tornLastLine)
                }
            } catch {
                finish(generation, error: error, torn: nil)
            }
        }
        stream?.close()
    }

    private func finish(_ generation: Int, error: Error?, torn: Int?) {
        state.withLock { state in
            guard state.generation == generation else { return }
            state.complete = true
            state.reachedEnd = true
            if let torn { state.tornLastLine = torn }
            if let error { state.error = error as? ArchiveError ?? ArchiveError(file: path, message: "\(error)") }
        }
    }
}
