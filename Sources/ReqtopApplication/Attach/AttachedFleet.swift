import Foundation
import RequestEndpoint
import RequestEventFormat
import RequestMonitor
import RequestOperations

/// What a merged monitor knows of the programs it is attached to, as one value with named
/// inputs (a reader's event, a program that fell behind, paused or ended; a socket claimed or
/// let go; the stop) and the views the screen asks for. ``AttachedPrograms`` is its one owner:
/// it holds it behind one lock and gives it each input whole, so a resync (the screen cleared
/// and every program's events shown again) never interleaves with another program's events.
/// No thread, socket or clock here: each input is tested alone (`AttachedFleetTests`), with
/// any value for a program's connection (the monitor's is an `EndpointClient`).
package struct AttachedFleet<Connection: Sendable>: Sendable {
    package private(set) var merge: ProgramMerge
    /// What each program showed, for a resync after one of them fell behind.
    private var journals: [Int32: OperationJournal] = [:]
    package private(set) var clients: [Int32: Connection] = [:]
    /// Pids being connected to or attached (a socket is not tried twice at once).
    private var known: Set<Int32> = []
    package private(set) var stopped = false
    /// Events seen from each program, and the rate over the last window of about 2 s.
    private var eventCounts: [Int32: Int] = [:]
    private var rates: [Int32: (since: Date, count: Int, perSecond: Double)] = [:]

    package init(start: Date) {
        merge = ProgramMerge(start: start)
    }

    // MARK: - Inputs

    /// A program whose hello was read joins; false when the monitor stopped meanwhile (the
    /// caller closes its connection).
    package mutating func adopt(_ client: Connection, _ facts: EndpointHelloFacts, at now: Date) -> Bool {
        guard !stopped else { return false }
        merge.join(facts, at: now)
        clients[facts.pid] = client
        journals[facts.pid] = OperationJournal()
        known.insert(facts.pid)
        return true
    }

    /// A socket of the endpoint folder is to be tried: true when no one tries or holds it.
    package mutating func claim(_ pid: Int32) -> Bool {
        guard !stopped, !known.contains(pid) else { return false }
        known.insert(pid)
        return true
    }

    /// A socket that did not answer is let go of: looked at again next time.
    package mutating func release(_ pid: Int32) {
        known.remove(pid)
    }

    /// The monitor stops: the connections to close.
    package mutating func stop() -> [Connection] {
        stopped = true
        return Array(clients.values)
    }

    /// An event of program `pid`, merged (ids prefixed, breakpoints renumbered), kept for a
    /// resync and counted for its rate.
    package mutating func eventRead(_ event: RequestEvent, from pid: Int32) -> RequestEvent {
        let merged = merge.merge(event, from: pid)
        journals[pid]?.apply([merged])
        eventCounts[pid, default: 0] += 1
        return merged
    }

    /// Program `pid` fell behind: a fresh snapshot of it follows. The other programs' events
    /// to show again on a cleared screen, and its label.
    package mutating func fellBehind(_ pid: Int32) -> (others: [RequestEvent], label: String) {
        journals[pid] = OperationJournal()
        let others = merge.ordered.map(\.pid).filter { $0 != pid }.flatMap { journals[$0]?.snapshot.events ?? [] }
        return (others, merge.programs[pid]?.label ?? "\(pid)")
    }

    /// Program `pid` was paused or resumed: whether any program still attached is paused.
    package mutating func suspended(_ pid: Int32, _ paused: Bool) -> Bool {
        merge.update(pid) { $0.paused = paused }
        return merge.programs.values.contains { $0.paused && !$0.ended }
    }

    package mutating func faultsChanged(_ pid: Int32, to count: Int) {
        merge.update(pid) { $0.faults = count }
    }

    /// Program `pid`'s connection ended: its label to say so, unless the monitor stopped.
    package mutating func ended(_ pid: Int32) -> String? {
        merge.update(pid) { $0.ended = true }
        clients[pid] = nil
        return stopped ? nil : merge.programs[pid]?.label
    }

    /// Answers from programs, each named by its label and in the monitor's ids.
    package mutating func named(_ outcomes: [(pid: Int32, outcome: QueueCommandOutcome)]) -> [(label: String, outcome: QueueCommandOutcome)] {
        outcomes.map { (label: merge.programs[$0.pid]?.label ?? "pid \($0.pid)", outcome: merge.merge($0.outcome, from: $0.pid)) }
    }

    // MARK: - Views

    /// What leaving says: how many programs were detached from, and how many had ended
    /// before (the others run on).
    package var goodbye: String {
        let programs = merge.programs.values
        let ended = programs.filter(\.ended).count
        let running = programs.count - ended
        return "reqtop: detached from \(programs.count) program\(programs.count == 1 ? "" : "s")"
            + (ended > 0 ? " (\(running) running on, \(ended) had ended)" : " (all running on)")
    }

    /// The header's status: how many programs, and which ended.
    package var status: String {
        let programs = merge.ordered
        let ended = programs.filter(\.ended).count
        let readOnly = programs.allSatisfy(\.readOnly) && !programs.isEmpty ? " READ-ONLY" : ""
        return "ATTACHED \(programs.count) program\(programs.count == 1 ? "" : "s")" + (ended > 0 ? " (\(ended) ended)" : "") + readOnly
    }

    /// Each program for the Hosts screen's PROGRAMS panel: its state, live operations and
    /// events a second over the last window (a new window begins every 2 s or so).
    package mutating func programLines(at now: Date) -> [ProgramLine] {
        merge.ordered.map { program in
            let count = eventCounts[program.pid] ?? 0
            var rate = rates[program.pid] ?? (now, count, 0)
            let window = now.timeIntervalSince(rate.since)
            if window >= 2 {
                rate = (now, count, Double(count - rate.count) / window)
            }
            rates[program.pid] = rate
            return ProgramLine(label: program.label, state: program.ended ? .ended : program.paused ? .paused : .attached,
                               live: program.ended ? 0 : journals[program.pid]?.liveCount ?? 0,
                               eventsPerSecond: program.ended ? 0 : rate.perSecond, faults: program.faults, readOnly: program.readOnly)
        }
    }

    package var faultsActive: Bool { merge.programs.values.contains { $0.faults > 0 && !$0.ended } }
}
