import Foundation
import RequestArchive
import RequestEndpoint
import RequestEventFormat
import RequestMonitor
import RequestOperations
import Synchronization

/// Several programs in one monitor (`reqtop attach --all`, `reqtop attach A B …`): one
/// endpoint connection and reader thread per program, their events merged by
/// ``ProgramMerge`` into one stream for the screen (or stdout), commands sent to the program
/// that owns the operation (``MergedQueueCommands``).
///
/// A program that starts later joins (with `--all`, the endpoint folder is looked at every
/// second); one that exits stays, marked ended, with its rows.
package final class AttachedPrograms: Sendable {
    /// Where the merged stream goes.
    package enum Output: Sendable {
        case screen(MonitorScreen)
        /// JSON lines on stdout, each with its `program`.
        case lines
    }

    /// Everything the readers share, behind one lock: its one owner is this object, which
    /// gives it each input whole (a reader merges, keeps and hands on its events in one
    /// section, so a resync never interleaves with another program's events).
    private let fleet: Mutex<AttachedFleet<EndpointClient>>
    /// `--record`: the merged stream as it is shown, each event with its `program`.
    package let recorder: EventLogWriter?
    private let watchesFolder: Bool
    private let output: Mutex<Output?> = Mutex(nil)
    private let finishedReaders = DispatchGroup()

    package init(watchesFolder: Bool, start: Date = Date(), recorder: EventLogWriter? = nil) {
        fleet = Mutex(AttachedFleet(start: start))
        self.watchesFolder = watchesFolder
        self.recorder = recorder
    }

    /// What leaving says: how many programs were detached from, and how many had ended before.
    package var goodbye: String { fleet.withLock(\.goodbye) }

    /// The header's status: how many programs, and which ended.
    package var status: String { fleet.withLock(\.status) }

    /// Each program for the Hosts screen's PROGRAMS panel.
    package var programLines: [ProgramLine] {
        let now = Date()
        return fleet.withLock { $0.programLines(at: now) }
    }

    package var faultsActive: Bool { fleet.withLock(\.faultsActive) }
    package var now: TimeInterval { fleet.withLock { $0.merge.now() } }

    /// Where a command goes, and the connections of the programs still attached.
    package func route(_ command: QueueCommand) -> (ProgramMerge.Route, [Int32: EndpointClient]) {
        fleet.withLock { ($0.merge.route(command), $0.clients) }
    }

    /// Answers from programs, each named by its label and in the monitor's ids.
    package func named(_ outcomes: [(pid: Int32, outcome: QueueCommandOutcome)]) -> [(label: String, outcome: QueueCommandOutcome)] {
        fleet.withLock { $0.named(outcomes) }
    }

    /// Adds a program whose hello was read: it is merged from now on.
    package func adopt(_ client: EndpointClient, hello: EndpointClient.Hello) {
        let facts = EndpointHelloFacts(pid: hello.pid, name: hello.name, time: hello.time, suspended: hello.suspended,
                                       faults: hello.faults, readOnly: hello.readOnly)
        let now = Date()
        guard fleet.withLock({ $0.adopt(client, facts, at: now) }) else { return client.close() }
        finishedReaders.enter()
        let thread = Thread { [self] in
            read(client, pid: hello.pid)
            finishedReaders.leave()
        }
        thread.name = "reqtop.attach.\(hello.pid)"
        thread.start()
    }

    /// Starts delivering to `output`; with `--all`, joins programs that start later.
    package func start(_ output: Output) {
        self.output.withLock { $0 = output }
        guard watchesFolder else { return }
        let thread = Thread { [self] in
            while !fleet.withLock(\.stopped) {
                joinNewPrograms()
                Thread.sleep(forTimeInterval: 1)
            }
        }
        thread.name = "reqtop.attach.watch"
        thread.start()
    }

    /// Connects to every socket in the endpoint folder not attached yet.
    package func joinNewPrograms() {
        for socket in EndpointDirectory.sockets() {
            guard fleet.withLock({ $0.claim(socket.pid) }) else { continue }
            if let (client, hello) = try? EndpointAttach.open(socket: socket) {
                adopt(client, hello: hello)
            } else {
                // Not an endpoint that answers now (one starting, or a socket left by a
                // program that died): looked at again next time.
                fleet.withLock { $0.release(socket.pid) }
            }
        }
    }

    /// Stops every reader and waits for them.
    package func stop() {
        let clients = fleet.withLock { $0.stop() }
        clients.forEach { $0.close() }
        finishedReaders.wait()
    }

    /// Waits until every program attached has ended.
    package func waitForAll() {
        finishedReaders.wait()
    }

    /// One program's reader: until it ends or the monitor stops.
    private func read(_ client: EndpointClient, pid: Int32) {
        // Only this reader's thread reads and changes it.
        var snapshots = SnapshotRepeat()
        client.run { message in
            snapshots.note(message)
            switch message {
            case .event(let event):
                let records = snapshots.recordsEvents
                fleet.withLock { fleet in
                    let merged = fleet.eventRead(event, from: pid)
                    if records { recorder?.append([merged]) }
                    deliver(.events([merged]))
                }
            case .snapshotEnd:
                break
            case .missed(let count):
                // A fresh snapshot of this program follows: clear the screen and show the
                // others again from what was kept of them.
                fleet.withLock { fleet in
                    let (others, label) = fleet.fellBehind(pid)
                    deliver(.resync(others, missed: count, program: label))
                }
            case .suspended(let paused):
                let anyPaused = fleet.withLock { $0.suspended(pid, paused) }
                deliver(.paused(anyPaused))
            case .faults(let count):
                fleet.withLock { $0.faultsChanged(pid, to: count) }
                deliver(.events([]))
            case .error(let text):
                if case .lines = output.withLock({ $0 }) {
                    ErrorOutput.print("reqtop: pid \(pid) says: \(text)")
                }
            case .hello, .snapshot, .reply, .unreadable:
                break
            }
        }
        let label = fleet.withLock { $0.ended(pid) }
        if let label { deliver(.ended(label)) }
    }

    private enum Delivery {
        case events([RequestEvent])
        case resync([RequestEvent], missed: Int, program: String)
        case paused(Bool)
        case ended(String)
    }

    private func deliver(_ delivery: Delivery) {
        switch output.withLock({ $0 }) {
        case .screen(let screen):
            switch delivery {
            case .events(let events): screen.feed(events)
            case .resync(let others, _, _):
                screen.reset()
                screen.feed(others)
            case .paused(let paused): screen.showPaused(paused)
            case .ended: screen.feed([])
            }
        case .lines:
            switch delivery {
            case .events(let events):
                // Unbuffered, line by line: a pipe reader sees each event as it happens.
                let text = events.map { EventLog.line(for: $0) + "\n" }.joined()
                if !text.isEmpty { StandardOutput.write(text) }
            case .resync(_, let missed, let program):
                ErrorOutput.print("reqtop: \(program): fell behind and missed \(missed) events; a fresh snapshot follows")
            case .paused: break
            case .ended(let program): ErrorOutput.print("reqtop: \(program) ended")
            }
        case nil:
            break
        }
    }
}
