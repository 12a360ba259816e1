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
final class AttachedPrograms: Sendable {
    /// Where the merged stream goes.
    enum Output: Sendable {
        case screen(MonitorScreen)
        /// JSON lines on stdout, each with its `program`.
        case lines
    }

    /// Everything the readers share, behind one lock: a reader merges, keeps and hands on its
    /// events under it, so a resync (the screen cleared and every program's events shown
    /// again) never interleaves with another program's events.
    struct Shared: Sendable {
        var merge: ProgramMerge
        /// What each program showed, for a resync after one of them fell behind.
        var journals: [Int32: OperationJournal] = [:]
        var clients: [Int32: EndpointClient] = [:]
        /// Pids being connected to or attached (a socket is not tried twice at once).
        var known: Set<Int32> = []
        var stopped = false
        /// Events seen from each program, and the rate over the last window of about 2 s.
        var eventCounts: [Int32: Int] = [:]
        var rates: [Int32: (since: Date, count: Int, perSecond: Double)] = [:]
    }

    let shared: Mutex<Shared>
    /// `--record`: the merged stream as it is shown, each event with its `program`.
    let recorder: EventLogWriter?
    private let watchesFolder: Bool
    private let output: Mutex<Output?> = Mutex(nil)
    private let finishedReaders = DispatchGroup()

    init(watchesFolder: Bool, start: Date = Date(), recorder: EventLogWriter? = nil) {
        shared = Mutex(Shared(merge: ProgramMerge(start: start)))
        self.watchesFolder = watchesFolder
        self.recorder = recorder
    }

    /// What leaving says: how many programs were detached from, and how many had ended
    /// before (the others run on).
    var goodbye: String {
        shared.withLock { shared in
            let programs = shared.merge.programs.values
            let ended = programs.filter(\.ended).count
            let running = programs.count - ended
            return "reqtop: detached from \(programs.count) program\(programs.count == 1 ? "" : "s")"
                + (ended > 0 ? " (\(running) running on, \(ended) had ended)" : " (all running on)")
        }
    }

    /// The header's status: how many programs, and which ended.
    var status: String {
        shared.withLock { shared in
            let programs = shared.merge.ordered
            let ended = programs.filter(\.ended).count
            let readOnly = programs.allSatisfy(\.readOnly) && !programs.isEmpty ? " READ-ONLY" : ""
            return "ATTACHED \(programs.count) program\(programs.count == 1 ? "" : "s")" + (ended > 0 ? " (\(ended) ended)" : "") + readOnly
        }
    }

    /// Each program for the Hosts screen's PROGRAMS panel: its state, live operations and
    /// events a second (over the last 2 s or so).
    var programLines: [ProgramLine] {
        shared.withLock { shared in
            let now = Date()
            return shared.merge.ordered.map { program in
                let count = shared.eventCounts[program.pid] ?? 0
                var rate = shared.rates[program.pid] ?? (now, count, 0)
                let window = now.timeIntervalSince(rate.since)
                if window >= 2 {
                    rate = (now, count, Double(count - rate.count) / window)
                }
                shared.rates[program.pid] = rate
                return ProgramLine(label: program.label, state: program.ended ? .ended : program.paused ? .paused : .attached,
                                   live: program.ended ? 0 : shared.journals[program.pid]?.liveCount ?? 0,
                                   eventsPerSecond: program.ended ? 0 : rate.perSecond, faults: program.faults, readOnly: program.readOnly)
            }
        }
    }

    var faultsActive: Bool { shared.withLock { $0.merge.programs.values.contains { $0.faults > 0 && !$0.ended } } }
    var now: TimeInterval { shared.withLock { $0.merge.now() } }

    /// Adds a program whose hello was read: it is merged from now on.
    func adopt(_ client: EndpointClient, hello: EndpointClient.Hello) {
        let facts = EndpointHelloFacts(pid: hello.pid, name: hello.name, time: hello.time, suspended: hello.suspended,
                                       faults: hello.faults, readOnly: hello.readOnly)
        let stopped = shared.withLock { shared -> Bool in
            guard !shared.stopped else { return true }
            shared.merge.join(facts, at: Date())
            shared.clients[hello.pid] = client
            shared.journals[hello.pid] = OperationJournal()
            shared.known.insert(hello.pid)
            return false
        }
        guard !stopped else { return client.close() }
        finishedReaders.enter()
        let thread = Thread { [self] in
            read(client, pid: hello.pid)
            finishedReaders.leave()
        }
        thread.name = "reqtop.attach.\(hello.pid)"
        thread.start()
    }

    /// Starts delivering to `output`; with `--all`, joins programs that start later.
    func start(_ output: Output) {
        self.output.withLock { $0 = output }
        guard watchesFolder else { return }
        let thread = Thread { [self] in
            while !shared.withLock(\.stopped) {
                joinNewPrograms()
                Thread.sleep(forTimeInterval: 1)
            }
        }
        thread.name = "reqtop.attach.watch"
        thread.start()
    }

    /// Connects to every socket in the endpoint folder not attached yet.
    func joinNewPrograms() {
        for socket in EndpointDirectory.sockets() {
            let isNew = shared.withLock { shared -> Bool in
                guard !shared.stopped, !shared.known.contains(socket.pid) else { return false }
                shared.known.insert(socket.pid)
                return true
            }
            guard isNew else { continue }
            if let (client, hello) = try? AttachCommand.open(socket: socket) {
                adopt(client, hello: hello)
            } else {
                // Not an endpoint that answers now (one starting, or a socket left by a
                // program that died): looked at again next time.
                shared.withLock { _ = $0.known.remove(socket.pid) }
            }
        }
    }

    /// Stops every reader and waits for them.
    func stop() {
        let clients = shared.withLock { shared -> [EndpointClient] in
            shared.stopped = true
            return Array(shared.clients.values)
        }
        clients.forEach { $0.close() }
        finishedReaders.wait()
    }

    /// Waits until every program attached has ended.
    func waitForAll() {
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
                shared.withLock { shared in
                    let merged = shared.merge.merge(event, from: pid)
                    shared.journals[pid]?.apply([merged])
                    shared.eventCounts[pid, default: 0] += 1
                    if records { recorder?.append([merged]) }
                    deliver(.events([merged]))
                }
            case .snapshotEnd:
                break
            case .missed(let count):
                // A fresh snapshot of this program follows: clear the screen and show the
                // others again from what was kept of them.
                shared.withLock { shared in
                    shared.journals[pid] = OperationJournal()
                    let others = shared.merge.ordered.map(\.pid).filter { $0 != pid }.flatMap { shared.journals[$0]?.snapshot.events ?? [] }
                    deliver(.resync(others, missed: count, program: shared.merge.programs[pid]?.label ?? "\(pid)"))
                }
            case .suspended(let paused):
                let anyPaused = shared.withLock { shared in
                    shared.merge.update(pid) { $0.paused = paused }
                    return shared.merge.programs.values.contains { $0.paused && !$0.ended }
                }
                deliver(.paused(anyPaused))
            case .faults(let count):
                shared.withLock { $0.merge.update(pid) { $0.faults = count } }
                deliver(.events([]))
            case .error(let text):
                if case .lines = output.withLock({ $0 }) {
                    ReqtopMain.printError("reqtop: pid \(pid) says: \(text)")
                }
            case .hello, .snapshot, .reply, .unreadable:
                break
            }
        }
        let label = shared.withLock { shared -> String? in
            shared.merge.update(pid) { $0.ended = true }
            shared.clients[pid] = nil
            return shared.stopped ? nil : shared.merge.programs[pid]?.label
        }
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
                ReqtopMain.printError("reqtop: \(program): fell behind and missed \(missed) events; a fresh snapshot follows")
            case .paused: break
            case .ended(let program): ReqtopMain.printError("reqtop: \(program) ended")
            }
        case nil:
            break
        }
    }
}
