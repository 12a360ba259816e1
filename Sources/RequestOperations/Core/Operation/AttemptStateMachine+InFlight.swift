import Foundation

/// The inputs of an attempt in flight: what its task reports (a response, a part of the body,
/// a redirect, its end), its timers, the hedges racing it. Each is a named input of the
/// machine; the ``InFlight`` value is changed here, in place, and nowhere else
/// (`MachineConfinementTests` checks that no other file reaches into it).
///
/// An input for a task that is not the lead (a late callback of a task cancelled or lost to
/// a hedge) or for an attempt that is over is *stale*: refused, nothing changed. One the
/// operation's own order rules out is *impossible*: refused too, and a failure in debug builds
/// (``impossible(_:)``).
extension AttemptStateMachine {
    // MARK: - The flight, changed in place

    /// Changes the flight in place when `lead` (nil: any task) leads it; nil, nothing changed,
    /// when it does not or the attempt is not in flight.
    private mutating func changeFlight<T>(lead task: Int?, _ change: (inout InFlight) -> T) -> T? {
        guard flightBox != nil else { return nil }
        if let task, flightBox!.value.task.identifier != task { return nil }
        // The box is the machine's alone but for a copy of the whole machine (a test's):
        // then this copy gets its own before it changes.
        if !isKnownUniquelyReferenced(&flightBox!) { flightBox = FlightBox(flightBox!.value) }
        let box = flightBox!
        defer { storedLeadRecord = box.value.leadRecord }
        return change(&box.value)
    }

    private mutating func changeFlight<T>(of id: AttemptID, _ change: (inout InFlight) -> T) -> T? {
        guard id == self.id else { return nil }
        return changeFlight(lead: nil, change)
    }

    private mutating func changeAnyFlight<T>(_ change: (inout InFlight) -> T) -> T? {
        changeFlight(lead: nil, change)
    }

    // MARK: - Reading

    /// The copy of the attempt in flight whose task is `task`; nil for a task of an attempt
    /// that is over (a late callback).
    func copy(_ task: Int) -> Copy? {
        flightBox?.value.copy(task)
    }

    /// The attempt's lead task is `task`.
    func isLead(_ task: Int) -> Bool {
        flightBox?.value.task.identifier == task
    }

    /// The record of the attempt under way: its lead's when hedges were sent.
    var leadRecord: Int? {
        #if DEBUG
        assert(storedLeadRecord == leadRecordInStage, "the lead record kept beside the stage is not the stage's")
        #endif
        return storedLeadRecord
    }

    /// The same read out of the stage (a copy of what it holds), to check the one kept beside it.
    private var leadRecordInStage: Int? {
        switch stage {
        case .inFlight: flightBox?.value.leadRecord
        case .deciding(_, let end), .stopped(_, .afterAnswer(let end)): end.leadRecord
        default: nil
        }
    }

    /// Sets the stage and the lead record it carries, in that order (the stage's `didSet`
    /// clears the record).
    mutating func setStage(_ stage: Stage, leadRecord: Int?) {
        self.stage = stage
        storedLeadRecord = leadRecord
    }

    /// Hedges racing attempt `id`, when it may race more (not ended on this side).
    func racing(of id: AttemptID) -> Int? {
        guard id == self.id, let box = flightBox, box.value.stop == nil else { return nil }
        return box.value.racers.count
    }

    /// The lead `task`'s redirect was refused on this side: its 3xx is no answer.
    func refusedRedirect(lead task: Int) -> Bool {
        guard isLead(task) else { return false }
        if case .redirectRefused? = flightBox!.value.stop { return true } else { return false }
    }

    /// Where a part of the lead `task`'s body goes, read as it comes; nil when the task is
    /// not the lead or this side ended the attempt (its bytes are not kept).
    func bodyDestination(lead task: Int) -> BodyDestination? {
        guard isLead(task) else { return nil }
        let box = flightBox!
        switch box.value.stop {
        case .redirectRefused?, .local?: return nil
        case .attemptTimeout?, .invalid?, nil:
            return BodyDestination(task: box.value.task, encodedLength: box.value.encodedLength, streaming: box.value.streaming, file: box.value.file)
        }
    }

    // MARK: - The request going up

    /// `sent` bytes of the lead `task`'s request body are on the wire: said about a hundred
    /// times for a body of any size, never closer than 64 KiB. Nil: nothing to tell yet.
    mutating func bodyBytesSent(lead task: Int, sent: Int, at now: TimeInterval, tracksProgress: Bool) -> UploadProgress? {
        changeFlight(lead: task) { flight -> UploadProgress? in
            if tracksProgress { flight.lastProgress = now }
            let total = flight.uploadTotal
            let step = total.map { max(64 << 10, $0 / 100) } ?? (1 << 20)
            guard sent - flight.uploadAnnounced >= step || (total == sent && sent > flight.uploadAnnounced) else { return nil }
            flight.uploadAnnounced = sent
            return UploadProgress(total: total)
        } ?? nil
    }

    // MARK: - The answer

    /// A response came on `task`: if hedges race, the first response wins
    /// (``InFlight/settleRace(answeredBy:)``).
    mutating func settleRace(answeredBy task: Int) -> (losers: [Racer], timer: ScheduledTimer?)? {
        changeAnyFlight { $0.settleRace(answeredBy: task) } ?? nil
    }

    /// A new response of the lead `task` starts a new body: the file begun for an earlier one
    /// (a 401 before the real answer, on Linux) is let go of.
    mutating func answerArriving(lead task: Int) -> Teardown {
        var teardown = Teardown()
        teardown.partial = changeFlight(lead: task) { flight -> ResponseFile? in
            defer { flight.file = nil }
            return flight.file
        } ?? nil
        return teardown
    }

    /// The lead `task`'s response was read: it is the attempt's answer, written to `file` if
    /// one was begun. Returns the lead's task; nil when `task` no longer leads (the caller
    /// lets go of the file).
    mutating func answerTaken(lead task: Int, file: ResponseFile?) -> TransportTask? {
        changeFlight(lead: task) { flight -> TransportTask in
            flight.invalid = nil
            flight.file = file
            return flight.task
        }
    }

    /// The answer's body is read from `now`: `encodedLength` is its size on the wire when it
    /// came encoded with a length.
    mutating func answerBegins(lead task: Int, at now: TimeInterval, tracksProgress: Bool, encodedLength: Int?) {
        changeFlight(lead: task) { flight in
            if tracksProgress { flight.lastProgress = now }
            flight.encodedLength = encodedLength
        }
    }

    /// The answer was valid and its body goes to the caller's stream: the attempt is committed.
    mutating func streamingBegins(lead task: Int) {
        changeFlight(lead: task) { $0.streaming = true }
    }

    /// The validator refused the answer; `stops`: the attempt ends without reading its body.
    mutating func answerInvalid(lead task: Int, _ failure: AttemptFailure, stops: Bool) {
        changeFlight(lead: task) { flight in
            flight.invalid = failure
            if stops { flight.stop(.invalid) }
        }
    }

    /// `count` bytes of the lead `task`'s body came at `now`: true when a `data` event is
    /// due (one per 256 KiB or 100 ms, not one per part).
    mutating func bodyBytesArrived(lead task: Int, count: Int, at now: TimeInterval, tracksProgress: Bool) -> Bool {
        changeFlight(lead: task) { flight -> Bool in
            if tracksProgress { flight.lastProgress = now }
            flight.unannouncedBytes += count
            return flight.unannouncedBytes >= RequestOperation.dataEventBytes || now - flight.lastDataEventAt >= RequestOperation.dataEventInterval
        } ?? false
    }

    /// Body bytes of the attempt in flight not yet told in a `data` event, taken to be told now.
    mutating func takeUnannouncedBytes(at now: TimeInterval) -> Int {
        changeAnyFlight { $0.takeUnannouncedBytes(at: now) } ?? 0
    }

    /// The lead `task` followed a redirect: how many it followed.
    mutating func redirectFollowed(lead task: Int) -> Int? {
        changeFlight(lead: task) { flight -> Int in
            flight.redirects += 1
            return flight.redirects
        }
    }

    /// The lead `task` was answered with a challenge the operation refused.
    mutating func challengeRefused(lead task: Int) {
        changeFlight(lead: task) { $0.challengeRefused = true }
    }

    // MARK: - Ending on this side

    /// This side ends the lead `task`'s attempt for `cause` (unless another cause came first):
    /// the lead's task, to cancel; nil when `task` does not lead.
    @discardableResult
    mutating func stop(lead task: Int, _ cause: AttemptStop) -> TransportTask? {
        changeFlight(lead: task) { flight -> TransportTask in
            flight.stop(cause)
            return flight.task
        }
    }

    /// As ``stop(lead:_:)`` for `error`, once: nil as well when the attempt failed on this side already.
    mutating func failLocally(lead task: Int, _ error: TransportError) -> TransportTask? {
        changeFlight(lead: task) { flight -> TransportTask? in
            if case .local? = flight.stop { return nil }
            flight.stop(.local(error))
            return flight.task
        } ?? nil
    }

    /// The attempt timeout of attempt `id`: its lead, to cancel (the hedges go with it).
    mutating func attemptTimedOut(of id: AttemptID) -> TransportTask? {
        changeFlight(of: id) { flight -> TransportTask in
            flight.stop(.attemptTimeout)
            flight.timers.attempt = nil
            return flight.task
        }
    }

    /// The read timer of attempt `id` fired at `now`: the attempt ends when nothing came for
    /// the whole span `read`; else the timer waits for the rest of it from the last progress.
    mutating func readTimerFired(of id: AttemptID, read: TimeInterval, at now: TimeInterval, error: TransportError) -> ReadTimerVerdict {
        changeFlight(of: id) { flight -> ReadTimerVerdict in
            flight.timers.read = nil
            guard flight.stop == nil else { return .none }
            let due = flight.lastProgress + read
            if now < due - 0.000_5 { return .rearm(at: due) }
            flight.stop(.local(error))
            return .cancel(flight.task)
        } ?? .none
    }

    /// The read timer made again: kept by attempt `id` in flight (false: it is over).
    mutating func readTimerRearmed(_ timer: ScheduledTimer, of id: AttemptID) -> Bool {
        changeFlight(of: id) { $0.timers.read = timer } != nil
    }

    // MARK: - The task's end

    /// The lead `task` ends (the first step): `problem`, if any, ends it on this side. Says
    /// whether it succeeded, and takes out the answer's file (moved into place or removed
    /// outside the lock).
    mutating func leadEnding(_ task: Int, succeededWithoutError: Bool, problem: TransportError?) -> (succeeded: Bool, file: ResponseFile?) {
        changeFlight(lead: task) { flight in
            if let problem { flight.stop(.local(problem)) }
            defer { flight.file = nil }
            return (succeededWithoutError && flight.invalid == nil && flight.stop == nil, flight.file)
        } ?? (false, nil)
    }

    /// How the lead `task` went (its failure, the error its event reports), whether hedges
    /// still race it and whether its body went to the caller's stream.
    mutating func judge(lead task: Int, answered: Bool, error: Error?) -> LeadJudgement? {
        changeFlight(lead: task) { flight in
            let (failure, reported) = flight.judge(answered: answered, error: error)
            return LeadJudgement(failure: failure, reported: reported, racing: !flight.racers.isEmpty && flight.stop != .attemptTimeout,
                                 streaming: flight.streaming)
        }
    }

    /// The lead task ended, as `end` says: the attempt decides (reactors, a breakpoint, the
    /// retry policy) and still holds its slot. Its timers and any racers are let go of. The
    /// operation gives it only for the lead (it asked ``isLead(_:)`` in the same section).
    mutating func taskEnded(_ task: Int, _ end: AttemptEnd) -> Teardown? {
        guard isLead(task) else {
            impossible("taskEnded(\(task))")
            return nil
        }
        let box = flightBox!
        var teardown = Teardown(timers: box.value.timers)
        teardown.tasks = box.value.racers.map(\.task)
        teardown.partial = box.value.file
        setStage(.deciding(box.value.granted, end), leadRecord: end.leadRecord)
        return teardown
    }

    // MARK: - Timers and hedges

    /// The timers of attempt `id` in flight: its timeout, its read timeout, its first
    /// hedge. Made once it was sent, so none can fire into the stage before; the teardown
    /// holds them when the attempt is over already (false), or the ones they replace.
    mutating func timersStarted(_ timers: AttemptTimers, of id: AttemptID) -> (Bool, Teardown) {
        let replaced = changeFlight(of: id) { flight -> Teardown in
            defer { flight.timers = timers }
            return Teardown(timers: flight.timers)
        }
        if replaced == nil, id == self.id, stage.isBeforeSending {
            // `sent` put the attempt in flight in the section before its task was resumed.
            impossible("timersStarted before the attempt was sent")
        }
        return replaced.map { (true, $0) } ?? (false, Teardown(timers: timers))
    }

    /// The hedge timer of attempt `id` fired: the hedges racing, when one more may be sent.
    mutating func hedgeDue(of id: AttemptID) -> Int? {
        changeFlight(of: id) { flight -> Int? in
            flight.timers.hedge = nil
            return flight.stop == nil ? flight.racers.count : nil
        } ?? nil
    }

    /// A hedge of attempt `id` was sent: it is attempt number ``attempt`` from now on. The
    /// operation gives it only for an attempt in flight (it asked ``racing(of:)`` in the same
    /// section).
    mutating func hedgeSent(_ racer: TransportTask, record: Int, lead: Int, nextTimer: ScheduledTimer?, of id: AttemptID) -> Int? {
        let sent = changeFlight(of: id) { flight -> Bool in
            flight.leadRecord = lead
            flight.racers.append(Racer(task: racer, record: record))
            if let nextTimer { flight.timers.hedge = nextTimer }
            return true
        }
        guard sent == true else {
            impossible("hedgeSent for an attempt not in flight")
            return nil
        }
        attempt += 1
        return attempt
    }

    /// Takes the racing hedges out of the attempt in flight (to close them).
    mutating func takeRacers() -> [Racer] {
        changeAnyFlight { $0.takeRacers() } ?? []
    }

    /// A racing hedge failed before any response: it leaves the race.
    mutating func removeRacer(at index: Int) -> Racer? {
        changeAnyFlight { $0.removeRacer(at: index) } ?? nil
    }

    /// The lead failed before any response while hedges race it: the oldest racer leads.
    mutating func promoteRacer() {
        changeAnyFlight { $0.promoteRacer() }
    }
}
