import Foundation
@testable import RequestOperations
import Synchronization
import XCTest

/// The attempt's state machine alone, without an operation or a transport: every stage ×
/// every input, against a table of the moves the engine makes (written out here, not read
/// from the machine), with what each stage holds and what each move lets go of — and whole
/// cycles as an operation lives them.
final class AttemptStateMachineTests: XCTestCase {
    typealias Machine = AttemptStateMachine

    // MARK: - Handles with names

    /// A timer that is only a name.
    final class NamedTimer: ScheduledTimer {
        let name: String
        init(_ name: String) { self.name = name }
        func cancel() {}
    }

    /// Makes handles and tells them apart by name: timers, tasks, work, passes, waits and
    /// gate tickets, as a teardown holds them.
    final class Handles: Sendable {
        let gate = ConcurrencyGate(limit: 1, handoff: nil)
        private let names = Mutex<(work: [Task<Void, Never>: String], passes: [ObjectIdentifier: String],
                                    tickets: [ConcurrencyGate.Ticket: String], cancelledWaits: [String])>(([:], [:], [:], []))

        init() {
            // The gate's one slot is taken, so every ticket asked for waits.
            gate.acquire {}
        }

        func timer(_ name: String) -> NamedTimer { NamedTimer(name) }
        func task(_ id: Int) -> TransportTask { TransportTask(identifier: id, handle: id) }

        func work(_ name: String) -> Task<Void, Never> {
            let work = Task<Void, Never> {}
            names.withLock { $0.work[work] = name }
            return work
        }

        func pass(_ name: String) -> CircuitPass {
            let pass = CircuitPass(isProbe: false) { _ in }
            names.withLock { $0.passes[ObjectIdentifier(pass)] = name }
            return pass
        }

        func wait(_ name: String) -> CircuitWait {
            CircuitWait { [self] in names.withLock { $0.cancelledWaits.append(name) } }
        }

        func ticket(_ name: String) -> ConcurrencyGate.Ticket {
            let ticket = gate.acquire {}
            names.withLock { $0.tickets[ticket] = name }
            return ticket
        }

        /// What `teardown` lets go of, by name (a circuit wait is named by cancelling it).
        func released(_ teardown: Teardown) -> Set<String> {
            var released = Set(teardown.timers.compactMap { ($0 as? NamedTimer)?.name })
            released.formUnion(teardown.tasks.map { "task\($0.identifier)" })
            if let unsent = teardown.unsent { released.insert("unsent task\(unsent.identifier)") }
            if teardown.releasesSlot { released.insert("slot") }
            let before = names.withLock { $0.cancelledWaits.count }
            teardown.circuitWait?.cancel()
            return names.withLock { names in
                released.formUnion(teardown.work.compactMap { names.work[$0] })
                if let pass = teardown.pass, let name = names.passes[ObjectIdentifier(pass)] { released.insert(name) }
                if let ticket = teardown.ticket, let name = names.tickets[ticket] { released.insert(name) }
                released.formUnion(names.cancelledWaits[before...])
                return released
            }
        }
    }

    let handles = Handles()
    let answered = AttemptStateMachine.AttemptEnd(failure: .status(503, headers: [:]), taskError: nil)

    // MARK: - The stages, and what each holds

    /// Each stage an attempt can be in, the inputs that lead there from a new machine, and
    /// what it holds then.
    private func stages() -> [(name: String, build: (inout Machine) -> Void, holds: Set<String>)] {
        let h = handles
        func asking(_ m: inout Machine) { _ = m.begin(needsAdmission: false) }
        func preparing(_ m: inout Machine) {
            asking(&m)
            _ = m.circuitPassed(h.pass("pass"), of: m.id)
            _ = m.slotGranted(slotHost: "api:443", prepares: true, of: m.id)
            _ = m.workStarted(h.work("preparer"), of: m.id)
        }
        func inFlight(_ m: inout Machine) {
            preparing(&m)
            _ = m.sent(h.task(1), at: 0, uploadTotal: nil, of: m.id)
            _ = m.timersStarted(AttemptTimers(attempt: h.timer("attemptTimer"), read: h.timer("readTimer"), hedge: h.timer("hedgeTimer")), of: m.id)
        }
        let end = answered
        func deciding(_ m: inout Machine) {
            inFlight(&m)
            _ = m.taskEnded(1, end)
        }
        return [
            ("pending", { _ in }, []),
            ("intercepting", { m in _ = m.begin(needsAdmission: true); _ = m.workStarted(h.work("admission"), of: m.id) }, ["admission"]),
            ("held", { m in _ = m.begin(needsAdmission: true); _ = m.workStarted(h.work("admission"), of: m.id); _ = m.hold(batch: "b", of: m.id) },
             ["admission"]),
            ("reactorBeforeSending", { m in _ = m.begin(needsAdmission: true); _ = m.workStarted(h.work("admission"), of: m.id)
                _ = m.waitForReactor("refresh", of: m.id) }, ["admission"]),
            ("waitingForSlot", { m in asking(&m); m.ticketIssued(h.ticket("ticket"), of: m.id) }, ["ticket"]),
            ("waitingForRateLimit", { m in asking(&m); _ = m.rateLimitPause(host: "api:443", until: 5, of: m.id)
                _ = m.rateLimitTimerStarted(h.timer("pauseTimer"), of: m.id) }, ["pauseTimer"]),
            ("waitingForCircuit", { m in asking(&m); _ = m.circuitWait(host: "api:443", h.wait("circuitWait"), of: m.id)
                _ = m.circuitTimerStarted(h.timer("circuitTimer"), of: m.id) }, ["circuitWait", "circuitTimer"]),
            ("preparing", preparing, ["slot", "pass", "preparer"]),
            ("inFlight", inFlight, ["slot", "pass", "task1", "attemptTimer", "readTimer", "hedgeTimer"]),
            ("deciding", deciding, ["slot", "pass"]),
            ("reacting", { m in deciding(&m); _ = m.react("refresh", of: m.id); _ = m.workStarted(h.work("reactorWait"), of: m.id) }, ["reactorWait"]),
            ("stoppedBeforeSending", { m in asking(&m); _ = m.stopBeforeSending(at: 1, of: m.id) }, []),
            ("stoppedAfterAnswer", { m in deciding(&m); _ = m.stopAfterAnswer(at: 2, of: m.id) }, []),
            ("waitingToRetry", { m in deciding(&m); _ = m.retryScheduled(until: 10, of: m.id)
                _ = m.retryWaitStarted(timer: h.timer("retryTimer"), observation: nil, of: m.id) }, ["retryTimer"]),
            ("finished", { m in _ = m.finish(.failure) }, []),
        ]
    }

    // MARK: - The inputs

    /// What an input did: its word (`refuse` when it did not fit) and what the machine let go of.
    struct Outcome {
        var word: String
        var released: Teardown = Teardown()
    }

    /// One of every input, each with handles of its own; `brings`: what it hands the machine.
    private func inputs() -> [(name: String, brings: Set<String>, give: (inout Machine) -> Outcome)] {
        let h = handles
        func word(_ change: Machine.Change) -> String { "\(change)" }
        func entry(_ entry: Machine.Entry) -> Outcome {
            switch entry {
            case .refuse: Outcome(word: "refuse")
            case .admit(_, let teardown): Outcome(word: "admit", released: teardown)
            case .askForSlot(_, let teardown): Outcome(word: "askForSlot", released: teardown)
            }
        }
        func optional(_ teardown: Teardown?, _ accepted: String = "ok") -> Outcome {
            teardown.map { Outcome(word: accepted, released: $0) } ?? Outcome(word: "refuse")
        }
        func flag(_ accepted: Bool, _ teardown: Teardown = Teardown()) -> Outcome {
            Outcome(word: accepted ? "ok" : "refuse", released: teardown)
        }
        let end = answered
        return [
            ("begin", [], { entry($0.begin(needsAdmission: false)) }),
            ("requeue", [], { m in entry(m.requeue(needsAdmission: false, of: m.id)) }),
            ("workStarted", ["newWork"], { m in let t = m.workStarted(h.work("newWork"), of: m.id); return flag(t.isEmpty, t) }),
            ("hold", [], { m in Outcome(word: word(m.hold(batch: "b2", of: m.id))) }),
            ("released", [], { m in Outcome(word: word(m.released(of: m.id))) }),
            ("waitForReactor", [], { m in Outcome(word: word(m.waitForReactor("other", of: m.id))) }),
            ("reactorFinished", [], { m in Outcome(word: word(m.reactorFinished(of: m.id))) }),
            ("intercepted", [], { m in flag(m.intercepted(of: m.id)) }),
            ("rateLimitPause", [], { m in Outcome(word: word(m.rateLimitPause(host: "api:443", until: 7, of: m.id))) }),
            ("rateLimitTimerStarted", ["newPauseTimer"], { m in
                let t = m.rateLimitTimerStarted(h.timer("newPauseTimer"), of: m.id)
                return flag(!h.released(t).contains("newPauseTimer"), t)
            }),
            ("rateLimitPauseOver", [], { m in flag(m.rateLimitPauseOver(of: m.id)) }),
            ("circuitWait", ["newWait"], { m in
                let (change, wants, unused) = m.circuitWait(host: "other:443", h.wait("newWait"), of: m.id)
                return Outcome(word: change == .refuse ? "refuse" : "\(change)\(wants ? "+timer" : "")", released: unused)
            }),
            ("circuitTimerStarted", ["newCircuitTimer"], { m in
                let t = m.circuitTimerStarted(h.timer("newCircuitTimer"), of: m.id)
                return flag(t.isEmpty, t)
            }),
            ("circuitPassed", ["newPass"], { m in let (ok, t) = m.circuitPassed(h.pass("newPass"), of: m.id); return flag(ok, t) }),
            ("circuitWaitExpired", [], { m in flag(m.circuitWaitExpired(of: m.id)) }),
            ("slotGranted", [], { m in
                let (grant, over) = m.slotGranted(slotHost: nil, prepares: false, of: m.id)
                return Outcome(word: "\(grant)", released: over)
            }),
            ("slotReturned", [], { m in optional(m.slotReturned(of: m.id)) }),
            ("sent", ["unsent task9"], { m in
                let refused = m.sent(h.task(9), at: 0, uploadTotal: nil, of: m.id)
                return refused.map { Outcome(word: "refuse", released: $0) } ?? Outcome(word: "ok")
            }),
            ("timersStarted", ["newAttemptTimer"], { m in
                let (ok, t) = m.timersStarted(AttemptTimers(attempt: h.timer("newAttemptTimer")), of: m.id)
                return flag(ok, t)
            }),
            ("hedgeSent", [], { m in flag(m.hedgeSent(h.task(5), record: 1, lead: 0, nextTimer: nil, of: m.id) != nil) }),
            ("taskEnded", [], { m in optional(m.taskEnded(1, end)) }),
            ("stopBeforeSending", [], { m in optional(m.stopBeforeSending(at: 3, of: m.id)) }),
            ("stopAfterAnswer", [], { m in optional(m.stopAfterAnswer(at: 3, of: m.id)) }),
            ("resolveBreakpoint", [], { m in
                switch m.resolveBreakpoint(needsAdmission: false) {
                case .refuse: Outcome(word: "refuse")
                case .admit: Outcome(word: "admit")
                case .askForSlot: Outcome(word: "askForSlot")
                case .decide: Outcome(word: "decide")
                }
            }),
            ("takePass", [], { m in
                guard let pass = m.takePass(of: m.id) else { return Outcome(word: "refuse") }
                var taken = Teardown()
                taken.pass = pass
                return Outcome(word: "ok", released: taken)
            }),
            ("react", [], { m in optional(m.react("other", of: m.id)) }),
            ("retryScheduled", [], { m in optional(m.retryScheduled(until: 20, of: m.id)) }),
            ("retryWaitStarted", ["newRetryTimer"], { m in
                let t = m.retryWaitStarted(timer: h.timer("newRetryTimer"), observation: nil, of: m.id)
                return flag(t.isEmpty, t)
            }),
            ("retrySooner", [], { m in optional(m.retrySooner(until: 4, of: m.id)) }),
            ("finish", [], { m in optional(m.finish(.cancelled)) }),
        ]
    }

    /// What the engine does with an input in each stage: its word, the phase after it, and
    /// what the move lets go of. Every pair not here must be refused with nothing changed,
    /// and must give back what the input brought.
    private static let moves: [String: [String: (String, RequestPhase, Set<String>)]] = [
        "pending": ["begin": ("askForSlot", .waitingForSlot, [])],
        "intercepting": ["hold": ("announce", .held(batch: "b2"), []),
                         "waitForReactor": ("announce", .waitingForReactor("other"), []),
                         "intercepted": ("ok", .waitingForSlot, []),
                         "stopBeforeSending": ("ok", .stoppedAtBreakpoint(3), ["admission"])],
        "held": ["released": ("announce", .intercepting, [])],
        "reactorBeforeSending": ["waitForReactor": ("announce", .waitingForReactor("other"), []),
                                 "reactorFinished": ("announce", .intercepting, [])],
        "waitingForSlot": ["rateLimitPause": ("announce", .waitingForRateLimit(host: "api:443", until: 7), []),
                           "circuitWait": ("announce+timer", .waitingForCircuit(host: "other:443"), []),
                           "circuitPassed": ("ok", .waitingForSlot, []),
                           "slotGranted": ("send", .preparing, []),
                           "slotReturned": ("ok", .waitingForSlot, []),
                           "stopBeforeSending": ("ok", .stoppedAtBreakpoint(3), ["ticket"])],
        "waitingForRateLimit": ["rateLimitPause": ("announce", .waitingForRateLimit(host: "api:443", until: 7), []),
                                "rateLimitTimerStarted": ("ok", .waitingForRateLimit(host: "api:443", until: 5), ["pauseTimer"]),
                                "rateLimitPauseOver": ("ok", .waitingForRateLimit(host: "api:443", until: 5), []),
                                "circuitWait": ("announce+timer", .waitingForCircuit(host: "other:443"), []),
                                "circuitPassed": ("ok", .waitingForRateLimit(host: "api:443", until: 5), []),
                                "slotGranted": ("send", .preparing, ["pauseTimer"]),
                                "slotReturned": ("ok", .waitingForSlot, ["pauseTimer"])],
        "waitingForCircuit": ["rateLimitPause": ("announce", .waitingForRateLimit(host: "api:443", until: 7), []),
                              "circuitWait": ("announce", .waitingForCircuit(host: "other:443"), ["circuitWait"]),
                              "circuitPassed": ("ok", .waitingForCircuit(host: "api:443"), ["circuitWait", "circuitTimer"]),
                              "circuitWaitExpired": ("ok", .waitingForCircuit(host: "api:443"), []),
                              "slotGranted": ("send", .preparing, ["circuitWait", "circuitTimer"]),
                              "slotReturned": ("ok", .waitingForSlot, ["circuitWait", "circuitTimer"])],
        "preparing": ["slotReturned": ("ok", .waitingForSlot, ["slot", "pass", "preparer"]),
                      "sent": ("ok", .inFlight, []),
                      "retryScheduled": ("ok", .waitingToRetry(until: 20), ["slot", "pass", "preparer"])],
        "inFlight": ["hedgeSent": ("ok", .inFlight, []),
                     "timersStarted": ("ok", .inFlight, ["attemptTimer", "readTimer", "hedgeTimer"]),
                     "taskEnded": ("ok", .inFlight, ["attemptTimer", "readTimer", "hedgeTimer"])],
        "deciding": ["requeue": ("askForSlot", .waitingForSlot, ["slot", "pass"]),
                     "stopAfterAnswer": ("ok", .stoppedAtBreakpoint(3), ["slot", "pass"]),
                     "takePass": ("ok", .inFlight, ["pass"]),
                     "react": ("ok", .waitingForReactor("other"), ["slot", "pass"]),
                     "retryScheduled": ("ok", .waitingToRetry(until: 20), ["slot", "pass"])],
        "reacting": ["requeue": ("askForSlot", .waitingForSlot, ["reactorWait"]),
                     "waitForReactor": ("announce", .waitingForReactor("other"), []),
                     "reactorFinished": ("stay", .waitingForReactor("refresh"), []),
                     "retryScheduled": ("ok", .waitingToRetry(until: 20), ["reactorWait"])],
        "stoppedBeforeSending": ["resolveBreakpoint": ("askForSlot", .waitingForSlot, [])],
        "stoppedAfterAnswer": ["resolveBreakpoint": ("decide", .inFlight, [])],
        "waitingToRetry": ["begin": ("askForSlot", .waitingForSlot, ["retryTimer"]),
                           "retrySooner": ("ok", .waitingToRetry(until: 4), ["retryTimer"])],
        "finished": [:],
    ]

    /// Handles an accepted input may drop without letting go of them: used up by the move.
    private static let spent: [String: Set<String>] = [
        "slotGranted": ["ticket"], "slotReturned": ["ticket"], "takePass": ["pass"],
        "intercepted": ["admission"], "sent": ["preparer"], "rateLimitPauseOver": ["pauseTimer"], "taskEnded": ["task1"],
    ]

    /// Pairs the operation's own order rules out (refused, and reported as impossible: a
    /// failure in debug builds). Every other refused pair is stale: a late input for an
    /// attempt that moved on, refused quietly.
    private static let impossible: [String: Set<String>] = {
        let beforeSending = ["pending", "intercepting", "held", "reactorBeforeSending", "waitingForSlot", "waitingForRateLimit",
                             "waitingForCircuit", "preparing", "stoppedBeforeSending"]
        let notInFlight = beforeSending + ["deciding", "reacting", "stoppedAfterAnswer", "waitingToRetry", "finished"]
        var pairs: [String: Set<String>] = [:]
        // `taskEnded` follows `isLead` and `hedgeSent` follows `racing` in the same lock section.
        for stage in notInFlight { pairs[stage, default: []].formUnion(["taskEnded", "hedgeSent"]) }
        // An attempt's timers are made after `sent` put it in flight.
        for stage in beforeSending { pairs[stage, default: []].insert("timersStarted") }
        return pairs
    }()

    /// Gives `input` with impossible inputs collected rather than stopping the test: the
    /// inputs that called themselves impossible.
    private func collectingImpossible(_ input: () -> Void) -> Set<String> {
        final class Said: Sendable { let messages = Mutex<[String]>([]) }
        let said = Said()
        Machine.$onImpossible.withValue({ message in said.messages.withLock { $0.append(message) } }) { input() }
        return Set(said.messages.withLock { $0 })
    }

    // MARK: - Tests

    func testEveryStageTakesExactlyTheInputsTheEngineGivesItAndLetsGoOfWhatItHeld() {
        let stages = stages()
        XCTAssertEqual(stages.count, 15, "a new stage needs a row here")
        XCTAssertEqual(inputs().count, 30, "a new input needs a column here")
        for stage in stages {
            var built = Machine()
            stage.build(&built)
            XCTAssertEqual(handles.released(built.held), stage.holds, "\(stage.name) holds")
            for (name, brings, give) in inputs() {
                var machine = Machine()
                stage.build(&machine)
                let (phase, id, attempt, held) = (machine.phase, machine.id, machine.attempt, handles.released(machine.held))
                var outcome = Outcome(word: "")
                let said = collectingImpossible { outcome = give(&machine) }
                let context = "\(name) in \(stage.name)"
                let isImpossible = Self.impossible[stage.name]?.contains(name) ?? false
                XCTAssertEqual(said.count, isImpossible ? 1 : 0, "\(context): impossible is \(isImpossible), said \(said)")
                let released = handles.released(outcome.released)
                if name == "finish" {
                    let finished = stage.name == "finished"
                    XCTAssertEqual(outcome.word, finished ? "refuse" : "ok", context)
                    XCTAssertEqual(released, finished ? [] : held, "\(context): the end lets go of all the stage held")
                    XCTAssertEqual(machine.phase, finished ? phase : .finished(.cancelled), context)
                    continue
                }
                guard let (word, next, lets) = Self.moves[stage.name]?[name] else {
                    XCTAssertEqual(outcome.word, "refuse", context)
                    XCTAssertEqual(machine.phase, phase, "\(context): a refused input changed the phase")
                    XCTAssertEqual(machine.id, id, "\(context): a refused input changed the attempt")
                    XCTAssertEqual(machine.attempt, attempt, context)
                    XCTAssertEqual(handles.released(machine.held), held, "\(context): a refused input changed what the stage holds")
                    XCTAssertEqual(released, brings, "\(context): a refused input gives back what it brought, nothing else")
                    continue
                }
                XCTAssertEqual(outcome.word, word, context)
                XCTAssertEqual(machine.phase, next, context)
                XCTAssertEqual(released, lets, "\(context) lets go of")
                // Nothing is lost: what the stage held is let go of or still held (a gate's ticket
                // is spent by its grant, a pass taken out is the caller's to tell).
                // The work or timer that gave the input is done (it is the caller), an ended task is over.
                let spent = Self.spent[name] ?? []
                let vanished = held.subtracting(lets).subtracting(spent).subtracting(handles.released(machine.held))
                XCTAssertEqual(vanished, [], "\(context): dropped without being let go of")
            }
        }
    }
}
