import Foundation
import RequestArchive
import RequestEndpoint
import RequestEventFormat
import RequestMonitor
import RequestOperations
import Synchronization

/// The live monitor fed from one program's endpoint connection. A program elsewhere
/// (`tls://`) is connected to again when the connection drops — a network cut looks like
/// an end — every 2 seconds until it answers or the person quits; the header says so.
package final class AttachedMonitor: Sendable {
    /// What the reader thread tells the screen, one state behind one lock: the header's
    /// status, the program's clock, whether it ended, its faults, and whether the person quit.
    /// Each change and each read is one section (the clock was two: a base and an end read
    /// apart could give a time past the program's end).
    private final class Link: Sendable {
        private struct State {
            var status = "ATTACHING"
            /// The program's session time at a moment of ours.
            var clockBase: (remote: TimeInterval, local: Date)?
            var ended = false
            /// Faults injected in the program (its hello, then each change a monitor made).
            var faults = 0
            /// The person quit: no reconnecting.
            var quitting = false
        }
        private let state = Mutex(State())

        /// The program's session time now; it stops when the program ends.
        func now() -> TimeInterval {
            state.withLock { state in
                guard let base = state.clockBase else { return 0 }
                return state.ended ? base.remote : base.remote + Date().timeIntervalSince(base.local)
            }
        }

        var status: String { state.withLock(\.status) }
        var faultsActive: Bool { state.withLock { $0.faults > 0 } }
        var isQuitting: Bool { state.withLock(\.quitting) }

        /// The program said hello (again, after a reconnection: `note`).
        func greeted(_ hello: EndpointClient.Hello, note: String) {
            state.withLock { state in
                state.clockBase = (hello.time, Date())
                state.status = "ATTACHED \(hello.name) \(hello.pid)\(hello.readOnly ? " READ-ONLY" : "")\(note)"
                state.faults = hello.faults
            }
        }

        func faultsChanged(to count: Int) {
            state.withLock { $0.faults = count }
        }

        /// The connection is lost; trying again (`status` says since when and how often).
        func reconnecting(_ status: String) {
            state.withLock { $0.status = status }
        }

        /// The program is gone: its clock stops where it was.
        func programEnded(_ name: String) {
            state.withLock { state in
                state.clockBase = state.clockBase.map { ($0.remote + Date().timeIntervalSince($0.local), Date()) }
                state.ended = true
                state.status = "ENDED: \(name) exited, q quits"
            }
        }

        /// The person quit: whether the program had ended by then.
        func quit() -> Bool {
            state.withLock { state in
                state.quitting = true
                return state.ended
            }
        }
    }

    /// Connects again; nil for a program on this machine (its end is its end).
    package typealias Reconnect = @Sendable () throws -> (EndpointClient, EndpointClient.Hello)

    private let connection: ConnectionBox
    private let screen: MonitorScreen
    private let link = Link()
    private let reconnect: Reconnect?
    /// `--record`: the program's events as they come (a resync's repeat left out).
    private let recorder: EventLogWriter?

    /// - Parameter readOnly: the program's hello said it takes no commands from this monitor.
    package init(client: EndpointClient, color: Bool, reconnect: Reconnect? = nil, recorder: EventLogWriter? = nil, readOnly: Bool = false) throws {
        connection = ConnectionBox(client)
        self.reconnect = reconnect
        self.recorder = recorder
        let link = self.link
        screen = try MonitorScreen(
            options: .init(source: "attach", color: color, clock: { link.now() }, playbackStatus: { PlaybackStatus(link.status) },
                           faultsActive: { link.faultsActive }),
            commands: RemoteQueueCommands(connection: connection, readOnly: readOnly))
    }

    package func run(_ hello: EndpointClient.Hello) throws {
        let screen = self.screen, link = self.link, connection = self.connection, reconnect = self.reconnect, recorder = self.recorder
        let name = "\(hello.name) \(hello.pid)"
        greet(hello)
        let reader = Thread {
            var samePID = false
            while true {
                Self.read(connection.client, into: screen, link: link, recorder: recorder, repeating: samePID)
                guard let reconnect, !link.isQuitting else { break }
                // A clean close is the program's end (it may come back: a restart); an error is the network's.
                let lost = connection.client.closeReason.map { "DISCONNECTED from \(name) (\($0))" } ?? "ENDED: \(name) closed the connection"
                guard let (client, again) = Self.reconnect(with: reconnect, lost: lost, link: link, screen: screen) else { break }
                connection.replace(with: client)
                samePID = again.pid == hello.pid
                // What the program sends now starts with a fresh snapshot.
                screen.reset()
                self.greet(again, note: " (reconnected at \(Self.clockTime()))")
            }
            link.programEnded(name)
            screen.feed([])
        }
        reader.start()
        screen.run()
        // Read before the connection closes: the reader takes our own close for the program's end.
        let ended = link.quit()
        connection.client.close()
        ErrorOutput.print(ended ? "reqtop: the program ended" : "reqtop: detached (\(name) runs on)")
    }

    private func greet(_ hello: EndpointClient.Hello, note: String = "") {
        link.greeted(hello, note: note)
        screen.showPaused(hello.suspended)
    }

    /// Feeds the screen until the connection ends.
    /// - Parameter repeating: the snapshot that comes first repeats what was recorded (a
    ///   reconnection to the same program), as a resync's does.
    private static func read(_ client: EndpointClient, into screen: MonitorScreen, link: Link, recorder: EventLogWriter?, repeating: Bool) {
        var snapshots = SnapshotRepeat(repeating: repeating)
        client.run { message in
            snapshots.note(message)
            switch message {
            case .event(let event):
                screen.feed([event])
                if snapshots.recordsEvents { recorder?.append([event]) }
            case .snapshotEnd:
                break
            case .missed:
                // A fresh snapshot follows: start again from it.
                screen.reset()
            case .suspended(let paused):
                // Paused or resumed by any monitor: every monitor shows it.
                screen.showPaused(paused)
            case .faults(let count):
                link.faultsChanged(to: count)
                screen.feed([])
            case .hello, .snapshot, .reply, .error, .unreadable:
                break
            }
        }
    }

    /// Tries every 2 s until the program answers or the person quits; says so in the header.
    private static func reconnect(with connect: Reconnect, lost: String, link: Link, screen: MonitorScreen) -> (EndpointClient, EndpointClient.Hello)? {
        let since = clockTime()
        var tries = 0
        while !link.isQuitting {
            tries += 1
            if let again = try? connect() { return again }
            link.reconnecting("\(lost) at \(since): connecting again (try \(tries)), q quits")
            screen.feed([])
            Thread.sleep(forTimeInterval: 2)
        }
        return nil
    }

    private static func clockTime() -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss"
        return formatter.string(from: Date())
    }
}

/// The connection a monitor's commands go through; replaced when a remote one reconnects.
package final class ConnectionBox: Sendable {
    private let current: Mutex<EndpointClient>

    package init(_ client: EndpointClient) {
        current = Mutex(client)
    }

    package var client: EndpointClient { current.withLock { $0 } }

    package func replace(with client: EndpointClient) {
        current.withLock { $0 = client }
    }
}
