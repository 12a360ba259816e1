import Foundation

/// The inputs of an attempt in flight: its lead and hedges, the end of its task.
extension AttemptStateMachine {
    // MARK: - Inputs while in flight

    /// The lead task `task`'s attempt in flight, for `change` to change; nil (and nothing
    /// changed) when `task` is not the lead of an attempt in flight.
    @discardableResult
    func inFlight<T>(lead task: Int, _ change: (InFlight) -> T) -> T? {
        guard case .inFlight(let flight) = stage, flight.task.identifier == task else { return nil }
        return change(flight)
    }

    /// The attempt in flight, for `change` to change, if `id` is still the attempt under way.
    @discardableResult
    func inFlight<T>(of id: AttemptID, _ change: (InFlight) -> T) -> T? {
        guard self.id == id, case .inFlight(let flight) = stage else { return nil }
        return change(flight)
    }

    /// The attempt in flight, whatever its lead.
    func anyInFlight<T>(_ change: (InFlight) -> T?) -> T? {
        guard case .inFlight(let flight) = stage else { return nil }
        return change(flight)
    }

    /// Takes the racing hedges out of the attempt in flight (to close them).
    func takeRacers() -> [Racer] {
        anyInFlight { $0.takeRacers() } ?? []
    }

    /// A response came on `task`: if hedges race, the first response wins
    /// (``InFlight/settleRace(answeredBy:)``).
    func settleRace(answeredBy task: Int) -> (losers: [Racer], timer: ScheduledTimer?)? {
        anyInFlight { $0.settleRace(answeredBy: task) }
    }

    /// A racing hedge failed before any response: it leaves the race.
    func removeRacer(at index: Int) -> Racer? {
        anyInFlight { $0.removeRacer(at: index) }
    }

    /// The lead failed before any response while hedges race it: the oldest racer leads.
    func promoteRacer() {
        anyInFlight { $0.promoteRacer() }
    }

    /// Body bytes of the attempt in flight not yet told in a `data` event, taken to be told now.
    func takeUnannouncedBytes(at now: TimeInterval) -> Int {
        anyInFlight { $0.takeUnannouncedBytes(at: now) } ?? 0
    }

    /// The copy of the attempt in flight whose task is `task`; nil for a task of an attempt
    /// that is over (a late callback).
    func copy(_ task: Int) -> Copy? {
        guard case .inFlight(let flight) = stage else { return nil }
        return flight.copy(task)
    }

    /// The attempt's lead task is `task`.
    func isLead(_ task: Int) -> Bool {
        if case .inFlight(let flight) = stage { flight.task.identifier == task } else { false }
    }

    /// The record of the attempt under way: its lead's when hedges were sent.
    var leadRecord: Int? {
        switch stage {
        case .inFlight(let flight): flight.leadRecord
        case .deciding(_, let end), .stopped(_, .afterAnswer(let end)): end.leadRecord
        default: nil
        }
    }

    /// A hedge of attempt `id` was sent: it is attempt number ``attempt`` from now on.
    /// Nil when the attempt is over (the caller discards the task and cancels the timer).
    mutating func hedgeSent(_ racer: TransportTask, record: Int, lead: Int, nextTimer: ScheduledTimer?, of id: AttemptID) -> Int? {
        let sent = inFlight(of: id) { flight -> Bool in
            flight.leadRecord = lead
            flight.racers.append(Racer(task: racer, record: record))
            if let nextTimer { flight.timers.hedge = nextTimer }
            return true
        }
        guard sent != nil else { return nil }
        attempt += 1
        return attempt
    }

    /// The lead task ended, as `end` says: the attempt decides (reactors, a breakpoint, the
    /// retry policy) and still holds its slot. Its timers and any racers are let go of.
    mutating func taskEnded(_ task: Int, _ end: AttemptEnd) -> Teardown? {
        guard case .inFlight(let flight) = stage, flight.task.identifier == task else { return nil }
        var teardown = Teardown(timers: flight.timers.all)
        teardown.tasks = flight.racers.map(\.task)
        stage = .deciding(flight.granted, end)
        return teardown
    }
}
