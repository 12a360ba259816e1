import Foundation
import RequestEventFormat
import RequestMonitor
import RequestOperations

/// Several programs' event streams as one, for `reqtop attach --all` (and `attach A B …`):
/// what each event becomes in the merged view, and which program a command goes to. Pure:
/// the session around it (``AttachedPrograms``) does the I/O.
///
/// - **Ids stay unique by program**: an operation `login` of pid 4121 is `4121/login` here,
///   and so are the ids its events name (a dependent operation's `parents`). A command about
///   `4121/login` goes to pid 4121 as `login`.
/// - **Each event names its program** (`program`, `api 4121`): the PROGRAM column, and a
///   recording of the merged view keeps it.
/// - **One clock**: each program counts time from its own start; its events are moved onto
///   the monitor's, which starts where the earliest program did.
/// - **Breakpoints are numbered anew**: each program numbers its own from 1, so breakpoint 2
///   here is one program's breakpoint, mapped both ways.
package struct ProgramMerge: Sendable {
    /// One attached program.
    package struct Program: Sendable, Equatable {
        package let pid: Int32
        package let name: String
        /// Seconds from the monitor's start to the program's (its events' `t` 0).
        package let offset: TimeInterval
        package var ended = false
        /// The program was paused by a monitor (any monitor: the program tells each one).
        package var paused = false
        package var faults = 0
        /// Takes no commands (`--read-only`).
        package let readOnly: Bool

        /// How the PROGRAM column and the `program` field name it.
        package var label: String { "\(name) \(pid)" }
        /// What its operation ids start with here.
        package var prefix: String { "\(pid)/" }
    }

    /// Where a command goes.
    package enum Route: Equatable {
        /// To one program, as it knows the operation or breakpoint.
        case one(pid: Int32, QueueCommand)
        /// To every program still attached (pause, cancel all, faults and breakpoints by host
        /// or match, ...): each one's own endpoint decides.
        case every(QueueCommand)
        /// To none: why.
        case none(String)
    }

    package private(set) var programs: [Int32: Program] = [:]
    /// When the monitor's clock started.
    package let start: Date
    private var breakpointsByProgram: [Int32: [Int: Int]] = [:]
    private var breakpointsHere: [Int: (pid: Int32, id: Int)] = [:]
    private var nextBreakpoint = 1

    package init(start: Date) {
        self.start = start
    }

    /// The programs in pid order.
    package var ordered: [Program] { programs.values.sorted { $0.pid < $1.pid } }

    /// Adds a program from its hello, read at `now`. A pid seen before (a program that
    /// ended, then a new one with its number) starts over.
    package mutating func join(_ hello: EndpointHelloFacts, at now: Date) {
        // The program's session started `hello.time` seconds before its hello came.
        let programStart = now.addingTimeInterval(-hello.time)
        programs[hello.pid] = Program(pid: hello.pid, name: hello.name, offset: programStart.timeIntervalSince(start),
                                      paused: hello.suspended, faults: hello.faults, readOnly: hello.readOnly)
    }

    package mutating func update(_ pid: Int32, _ change: (inout Program) -> Void) {
        guard programs[pid] != nil else { return }
        change(&programs[pid]!)
    }

    /// The monitor's clock now: seconds since ``start``.
    package func now(_ date: Date = Date()) -> TimeInterval { date.timeIntervalSince(start) }

    /// `event` of program `pid` as the merged view shows it.
    package mutating func merge(_ event: RequestEvent, from pid: Int32) -> RequestEvent {
        guard let program = programs[pid] else { return event }
        var merged = event
        merged.time += program.offset
        merged.program = program.label
        if !event.operationID.isEmpty { merged.operationID = program.prefix + event.operationID }
        switch event.payload {
        case .queued(let method, let url, let headers, let maxAttempts, let body, var options?) where !options.parents.isEmpty:
            options.parents = options.parents.map { program.prefix + $0 }
            merged.payload = .queued(method: method, url: url, headers: headers, maxAttempts: maxAttempts, body: body, options: options)
        case .breakpointSet(let id, let rule, let by, let enabled, let afterResponse):
            merged.payload = .breakpointSet(id: breakpoint(id, of: pid), rule: rule, by: by, enabled: enabled, afterResponse: afterResponse)
        case .breakpointRemoved(let id):
            merged.payload = .breakpointRemoved(id: breakpoint(id, of: pid))
        case .breakpoint(let id, let rule, let by, let afterResponse):
            merged.payload = .breakpoint(id: breakpoint(id, of: pid), rule: rule, by: by, afterResponse: afterResponse)
        // Nothing here names another operation or a breakpoint (a new kind that does must
        // say so here: no `default:`).
        case .queued, .built, .started, .sent, .connection, .preparationFailed, .taskCreated, .redirect, .response, .data,
             .uploaded, .responseBody, .requestBody, .headerFields, .messages, .trailers, .taskCompleted, .validationFailed, .retryScheduled, .retryDenied, .hedged, .injected,
             .breakpointResolved, .circuitWaiting, .circuitOpened, .circuitHalfOpen, .circuitClosed,
             .rateLimitWaiting, .rateLimited, .retryBudget, .earlyRetry, .intercepted, .held, .released, .reactorStarted,
             .reactorWaiting, .reactorFinished, .requeued, .cancelled, .finished, .missed, .other:
            break
        }
        return merged
    }

    /// The merged number of program `pid`'s breakpoint `id`, made on first sight.
    package mutating func breakpoint(_ id: Int, of pid: Int32) -> Int {
        if let known = breakpointsByProgram[pid]?[id] { return known }
        let here = nextBreakpoint
        nextBreakpoint += 1
        breakpointsByProgram[pid, default: [:]][id] = here
        breakpointsHere[here] = (pid, id)
        return here
    }

    /// Where `command` (in the merged view's ids) goes.
    package func route(_ command: QueueCommand) -> Route {
        func program(of id: String) -> (Program, String)? {
            guard let slash = id.firstIndex(of: "/"), let pid = Int32(id[..<slash]), let program = programs[pid] else { return nil }
            return (program, String(id[id.index(after: slash)...]))
        }
        func toOwner(_ id: String, _ make: (String) -> QueueCommand) -> Route {
            guard let (program, local) = program(of: id) else { return .none("no program here has \(id)") }
            guard !program.ended else { return .none("\(program.label) has ended") }
            return .one(pid: program.pid, make(local))
        }
        func toBreakpointOwner(_ id: Int, _ make: (Int) -> QueueCommand) -> Route {
            guard let (pid, local) = breakpointsHere[id], let program = programs[pid] else { return .none("no breakpoint \(id)") }
            guard !program.ended else { return .none("breakpoint \(id) was \(program.label)'s, which has ended") }
            return .one(pid: pid, make(local))
        }
        switch command {
        case .retry(let id): return toOwner(id) { .retry(operation: $0) }
        case .cancel(let id): return toOwner(id) { .cancel(operation: $0) }
        case .resend(let id, let edited): return toOwner(id) { .resend(operation: $0, edited: edited) }
        case .resolveBreakpoint(let id, let resolution): return toOwner(id) { .resolveBreakpoint(operation: $0, resolution: resolution) }
        case .setBreakpointEnabled(let id, let enabled): return toBreakpointOwner(id) { .setBreakpointEnabled(id: $0, enabled: enabled) }
        case .removeBreakpoint(let id): return toBreakpointOwner(id) { .removeBreakpoint(id: $0) }
        // A host of one program (the Hosts screen split by program: `4121/api.example.com:443`)
        // goes to that program alone.
        case .isolate(let host) where host.contains("/"): return toOwner(host) { .isolate(host: $0) }
        case .closeCircuit(let host) where host.contains("/"): return toOwner(host) { .closeCircuit(host: $0) }
        case .toggleFault(let host) where host.contains("/"): return toOwner(host) { .toggleFault(host: $0) }
        case .cancelAll, .setSuspended, .releaseBatches, .isolate, .closeCircuit, .toggleFault, .clearFaults, .addBreakpoint, .clearBreakpoints:
            return programs.values.contains { !$0.ended } ? .every(command) : .none("every program has ended")
        }
    }

    /// A program's outcome in the merged view's numbers: ids with their program's prefix,
    /// breakpoints by their merged number.
    package mutating func merge(_ outcome: QueueCommandOutcome, from pid: Int32) -> QueueCommandOutcome {
        guard let program = programs[pid] else { return outcome }
        let id = { (local: String) in program.prefix + local }
        switch outcome {
        case .retryingNow(let op): return .retryingNow(operation: id(op))
        case .runningAgain(let op, let again): return .runningAgain(operation: id(op), as: id(again))
        case .sentEdited(let op, let edited): return .sentEdited(operation: id(op), as: id(edited))
        case .breakpointSet(let number, let match): return .breakpointSet(id: breakpoint(number, of: pid), match: match)
        case .breakpointResolved(let op, let how): return .breakpointResolved(operation: id(op), how: how)
        case .notStopped(let op): return .notStopped(operation: id(op))
        case .breakpointEnabled(let number, let enabled): return .breakpointEnabled(id: breakpoint(number, of: pid), enabled: enabled)
        case .breakpointRemoved(let number): return .breakpointRemoved(id: breakpoint(number, of: pid))
        case .unknownBreakpoint(let number): return .unknownBreakpoint(id: breakpoint(number, of: pid))
        case .notWaitingToRetry(let op): return .notWaitingToRetry(operation: id(op))
        case .cancelled(let op): return .cancelled(operation: id(op))
        case .alreadyEnded(let op): return .alreadyEnded(operation: id(op))
        case .unknownOperation(let op): return .unknownOperation(operation: id(op))
        // No id in these (a new case with one must say so here: no `default:`).
        case .cancelledAll, .paused, .resumed, .released, .isolated, .circuitClosed, .circuitAlreadyClosed, .noCircuitBreaker,
             .faultSet, .faultRemoved, .faultsCleared, .faultsNotAccepted, .badMatch, .breakpointsCleared, .readOnly, .notCarriedOut:
            return outcome
        }
    }
}

/// What the merge needs of a program's hello (``RequestEndpoint/EndpointClient/Hello``).
package struct EndpointHelloFacts: Sendable {
    package var pid: Int32
    package var name: String
    package var time: TimeInterval
    package var suspended: Bool
    package var faults: Int
    package var readOnly: Bool
}
