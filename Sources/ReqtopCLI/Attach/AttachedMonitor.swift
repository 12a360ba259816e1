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
final class AttachedMonitor: Sendable {
    /// What the reader thread tells the screen: the header status and the program's clock.
    private final class Shared: Sendable {
        let status = Mutex("ATTACHING")
        let clockBase = Mutex<(remote: TimeInterval, local: Date)?>(nil)
        let ended = Mutex(false)
        /// Faults injected in the program (its hello, then each change a monitor made).
        let faults = Mutex(0)
        /// The person quit: no reconnecting.
        let quitting = Mutex(false)

        /// The program's session time now; it stops when the program ends.
        func now() -> TimeInterval {
            guard let base = clockBase.withLock({ $0 }) else { return 0 }
            return ended.withLock { $0 } ? base.remote : base.remote + Date().timeIntervalSince(base.local)
        }
    }

    /// Connects again; nil for a program on this machine (its end is its end).
    typealias Reconnect = @Sendable () throws -> (EndpointClient, EndpointClient.Hello)

    private let connection: ConnectionBox
    private let screen: MonitorScreen
    private let shared = Shared()
    private let reconnect: Reconnect?
    /// `--record`: the program's events as they come (a resync's repeat left out).
    private let recorder: EventLogWriter?

    /// - Parameter readOnly: the program's hello said it takes no commands from this monitor.
    init(client: EndpointClient, color: Bool, reconnect: Reconnect? = nil, recorder: EventLogWriter? = nil, readOnly: Bool = false) throws {
        connection = ConnectionBox(client)
        self.reconnect = reconnect
        self.recorder = recorder
        let shared = self.shared
        screen = try MonitorScreen(
            options: .init(source: "attach", color: color, clock: { shared.now() }, playbackStatus: { PlaybackStatus(shared.status.withLock { $0 }) },
                           faultsActive: { shared.faults.withLock { $0 } > 0 }),
            commands: RemoteQueueCommands(connection: connection, readOnly: readOnly))
    }

    func run(_ hello: EndpointClient.Hello) throws {
        let screen = self.screen, shared = self.shared, connection = self.connection, reconnect = self.reconnect, recorder = self.recorder
        let name = "\(hello.name) \(hello.pid)"
        greet(hello)
        let reader = Thread {
            var samePID = false
            while true {
                Self.read(connection.client, into: screen, shared: shared, recorder: recorder, repeating: samePID)
                guard let reconnect, !shared.quitting.withLock({ $0 }) else { break }
                // A clean close is the program's end (it may come back: a restart); an error is the network's.
                let lost = connection.client.closeReason.map { "DISCONNECTED from \(name) (\($0))" } ?? "ENDED: \(name) closed the connection"
                guard let (client, again) = Self.reconnect(with: reconnect, lost: lost, shared: shared, screen: screen) else { break }
                connection.replace(with: client)
                samePID = again.pid == hello.pid
                // What the program sends now starts with a fresh snapshot.
                screen.reset()
                self.greet(again, note: " (reconnected at \(Self.clockTime()))")
            }
            // Freeze the clock where the program stopped.
            shared.clockBase.withLock { base in base = base.map { ($0.remote + Date().timeIntervalSince($0.local), Date()) } }
            shared.ended.withLock { $0 = true }
            shared.status.withLock { $0 = "ENDED: \(name) exited, q quits" }
            screen.feed([])
        }
        reader.start()
        screen.run()
        // Read before the connection closes: the reader takes our own close for the program's end.
        let ended = shared.ended.withLock { $0 }
        shared.quitting.withLock { $0 = true }
        connection.client.close()
        ReqtopMain.printError(ended ? "reqtop: the program ended" : "reqtop: detached (\(name) runs on)")
    }

    private func greet(_ hello: EndpointClient.Hello, note: String = "") {
        shared.clockBase.withLock { $0 = (hello.time, Date()) }
        shared.status.withLock { $0 = "ATTACHED \(hello.name) \(hello.pid)\(hello.readOnly ? " READ-ONLY" : "")\(note)" }
        screen.showPaused(hello.suspended)
        shared.faults.withLock { $0 = hello.faults }
    }

    /// Feeds the screen until the connection ends.
    /// - Parameter repeating: the snapshot that comes first repeats what was recorded (a
    ///   reconnection to the same program), as a resync's does.
    private static func read(_ client: EndpointClient, into screen: MonitorScreen, shared: Shared, recorder: EventLogWriter?, repeating: Bool) {
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
                shared.faults.withLock { $0 = count }
                screen.feed([])
            case .hello, .snapshot, .reply, .error, .unreadable:
                break
            }
        }
    }

    /// Tries every 2 s until the program answers or the person quits; says so in the header.
    private static func reconnect(with connect: Reconnect, lost: String, shared: Shared, screen: MonitorScreen) -> (EndpointClient, EndpointClient.Hello)? {
        let since = clockTime()
        var tries = 0
        while !shared.quitting.withLock({ $0 }) {
            tries += 1
            if let again = try? connect() { return again }
            shared.status.withLock { $0 = "\(lost) at \(since): connecting again (try \(tries)), q quits" }
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
final class ConnectionBox: Sendable {
    private let current: Mutex<EndpointClient>

    init(_ client: EndpointClient) {
        current = Mutex(client)
    }

    var client: EndpointClient { current.withLock { $0 } }

    func replace(with client: EndpointClient) {
        current.withLock { $0 = client }
    }
}
