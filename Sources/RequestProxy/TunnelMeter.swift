import ChannelGlue
import Foundation
import NIOCore
import RequestOperations

/// A tunnel as a row in the monitor: the bytes a passed-through `CONNECT` or an upgraded
/// connection carries, told as the events any operation's are — `queued` (method `CONNECT`, or
/// the upgrade's own request), `started`, `taskCreated`, then `uploaded` (bytes from the
/// client so far) and `data` (bytes to it) at most twice a second, and `taskCompleted` and
/// `finished` (with the totals) when either side closes. The engine never makes such an
/// operation itself; `reqtop whatif` and `replay --send` leave them out (a tunnel's bytes are
/// not requests that can be sent again).
///
/// Used on the tunnel's event loop only (both channels are on it).
final class TunnelMeter: GlueMeter {
    private let id: String
    private let events: EventHub
    private let openedAt: TimeInterval
    private var up = 0, down = 0
    private var toldUp = 0, toldDown = 0
    private var ticking: RepeatedTask?
    private var closed = false

    /// Publishes the row's start: `method` and `url` as the client asked (`CONNECT
    /// https://host:port`, or the upgrade's request).
    init(id: String, method: String, url: String, headers: [String: String], origin: String?, events: EventHub, on loop: EventLoop) {
        self.id = id
        self.events = events
        var options = RecordedOptions()
        options.origin = origin
        openedAt = events.publish(operation: id, attempt: 1, .queued(method: method, url: url, headers: headers, maxAttempts: 1, options: options)).time
        _ = events.publish(operation: id, attempt: 1, .started)
        _ = events.publish(operation: id, attempt: 1, .taskCreated(taskIdentifier: 0, url: url))
        let meter = NIOLoopBound(self, eventLoop: loop)
        ticking = loop.scheduleRepeatedTask(initialDelay: .milliseconds(500), delay: .milliseconds(500)) { _ in meter.value.tell() }
    }

    func countUp(_ bytes: Int) { up += bytes }
    func countDown(_ bytes: Int) { down += bytes }

    /// The bytes since the last time, as `uploaded` (the total from the client) and `data`.
    private func tell() {
        if up != toldUp {
            toldUp = up
            _ = events.publish(operation: id, attempt: 1, .uploaded(bytes: up, totalBytes: nil))
        }
        if down != toldDown {
            _ = events.publish(operation: id, attempt: 1, .data(bytes: down - toldDown))
            toldDown = down
        }
    }

    /// Either side closed (`error`: how, when not cleanly): the row ends with the totals.
    func close(_ error: Error?) {
        guard !closed else { return }
        closed = true
        ticking?.cancel()
        tell()
        let failure = error.map { TransportError(code: URLError.Code.networkConnectionLost.rawValue, message: "\($0)") }
        _ = events.publish(operation: id, attempt: 1, .taskCompleted(error: failure))
        let duration = events.elapsed() - openedAt
        _ = events.publish(operation: id, attempt: 1, .finished(outcome: failure == nil ? .success : .failure, status: nil, attempts: 1, duration: duration,
                                                             reason: "tunnel closed: \(up) bytes from the client, \(down) to it"))
    }
}
