import Foundation

extension AttemptStateMachine {
    /// An attempt whose request is on the transport: its task (the *lead*), the hedges racing
    /// it, its timers, and what the transport told it so far. It holds the gate's slot and the
    /// breaker's pass it was granted.
    ///
    /// A value held by the `inFlight` stage alone, changed in place by the machine's inputs
    /// (AttemptStateMachine+InFlight.swift), never handed out to be changed elsewhere. It
    /// holds the answer's file while the body is written to it: leaving the stage any way but
    /// the task's end lets go of the file with the task and the timers.
    struct InFlight {
        var granted: Granted
        var task: TransportTask
        /// The record of the attempt whose task is `task` when hedges were sent (nil: the
        /// last record). A hedge that answers first becomes the lead.
        var leadRecord: Int?
        /// Hedges in flight with no response yet (see RequestOperation+Hedge.swift).
        var racers: [Racer] = []
        /// Its timers, each cancelled whichever way the attempt leaves the stage.
        var timers = AttemptTimers()
        /// Why the attempt is being ended on this side, if it is: the first cause wins.
        var stop: AttemptStop?
        /// The validator's verdict on the response.
        var invalid: AttemptFailure?
        var challengeRefused = false
        /// Redirects the lead task followed so far.
        var redirects = 0
        /// When the transport last said something (the task made, the request written, a
        /// response, a byte).
        var lastProgress: TimeInterval = 0
        /// The answer's size on the wire when it came encoded (gzip, deflate) with a
        /// `Content-Length`: what ``RequestOptions/maxDecodedRatio`` judges its decoded bytes by.
        var encodedLength: Int?
        /// The request body's length, when known, and how much of it the last `uploaded`
        /// event said was sent.
        var uploadTotal: Int?
        var uploadAnnounced = 0
        /// The answer was valid and its body goes to the caller's ``ResponseBodyStream``: the
        /// attempt is committed (a failure from here is not retried: parts were handed over).
        var streaming = false
        /// Body bytes not yet told in a `data` event, and when the last one was published.
        var unannouncedBytes = 0
        var lastDataEventAt: TimeInterval = -.infinity
        /// Where the body goes, for a 2xx with a destination: begun when the answer came.
        var file: ResponseFile?

        init(granted: Granted, task: TransportTask) {
            self.granted = granted
            self.task = task
        }

        /// What leaving the stage lets go of: its timers, its tasks, its slot and pass, and a
        /// download still being written.
        var holdings: Teardown {
            var teardown = Teardown(timers: timers)
            teardown.tasks = [task] + racers.map(\.task)
            teardown.release(granted)
            teardown.partial = file
            return teardown
        }

        /// Ends the attempt with `cause` unless another cause came first.
        mutating func stop(_ cause: AttemptStop) {
            if stop == nil { stop = cause }
        }

        /// How the lead's task went: the failure the retry policy judges (nil: success) and
        /// the error its event reports.
        func judge(answered: Bool, error: Error?) -> (AttemptFailure?, TransportError?) {
            var error = error
            // A refused challenge ends the task as "cancelled" on Linux, after the 401
            // response and its body arrived: that response is the answer.
            if challengeRefused, answered, (error as? URLError)?.code == .cancelled {
                error = nil
            }
            switch stop {
            case .redirectRefused(let refused)?:
                return (.transport(URLError.Code(rawValue: refused.code) ?? .unsupportedURL), refused)
            case .local(let local)?:
                return (.transport(URLError.Code(rawValue: local.code) ?? .unknown), local)
            case .attemptTimeout?:
                return (.transport(.timedOut), TransportError(code: URLError.Code.timedOut.rawValue, message: "timed out (attempt timeout)", timeout: .attempt))
            case .invalid?:
                return (invalid, error.map(TransportError.init))
            case nil:
                if let error {
                    let transport = TransportError(error)
                    return (.transport(URLError.Code(rawValue: transport.code) ?? .unknown), transport)
                }
                return (invalid, nil)
            }
        }
    }

    /// Where a part of the lead's body goes (``bodyDestination(lead:)``).
    struct BodyDestination {
        let task: TransportTask
        /// The answer's size on the wire, when it came encoded with a length.
        let encodedLength: Int?
        /// To the caller's stream.
        let streaming: Bool
        /// To the answer's file.
        let file: ResponseFile?
    }

    /// An `uploaded` event is due: the body's length, when known.
    struct UploadProgress {
        let total: Int?
    }

    /// What the read timer found.
    enum ReadTimerVerdict {
        case none
        /// A byte came meanwhile: the timer waits for the rest of the span from it.
        case rearm(at: TimeInterval)
        /// Nothing came for the whole span: the lead is cancelled (the hedges with it).
        case cancel(TransportTask)
    }

    /// How the lead's task went (``judge(lead:answered:error:)``).
    struct LeadJudgement {
        /// What the retry policy judges; nil: success.
        let failure: AttemptFailure?
        /// The error its `taskCompleted` event reports.
        let reported: TransportError?
        /// Hedges still race it (the lead's failure hands the lead to one of them).
        let racing: Bool
        /// Its body went to the caller's stream.
        let streaming: Bool
    }

    /// A hedged copy of the attempt's request in flight, racing the lead for a response.
    struct Racer {
        let task: TransportTask
        /// Its index in the operation's records (its attempt number is there).
        let record: Int
    }

    /// Why this side ends an attempt in flight.
    enum AttemptStop: Equatable {
        /// A redirect the engine would not follow (`RedirectSafety`).
        case redirectRefused(TransportError)
        /// The body over its limit, a file that could not be written, no length to read the
        /// answer by, no byte for the read timeout.
        case local(TransportError)
        /// The attempt timeout.
        case attemptTimeout
        /// The answer failed validation and ``RequestOptions/cancelOnInvalidResponse`` said to
        /// stop reading it.
        case invalid
    }

    /// Which copy of the attempt in flight a task is.
    enum Copy {
        case lead(TransportTask)
        /// A racing hedge: its place in the race and its record.
        case racer(index: Int, Racer)

        var task: TransportTask {
            switch self {
            case .lead(let task): task
            case .racer(_, let racer): racer.task
            }
        }
    }
}

/// The race between an attempt's lead and its hedges.
extension AttemptStateMachine.InFlight {
    typealias Racer = AttemptStateMachine.Racer

    /// The copy whose task is `task`, if it is one of this attempt's.
    func copy(_ task: Int) -> AttemptStateMachine.Copy? {
        if self.task.identifier == task { return .lead(self.task) }
        guard let index = racers.firstIndex(where: { $0.task.identifier == task }) else { return nil }
        return .racer(index: index, racers[index])
    }

    mutating func takeRacers() -> [Racer] {
        defer { racers = [] }
        return racers
    }

    /// A response came on `task`: if hedges race, the first response wins. A racer that
    /// answered leads from now on; every other copy lost (returned, with the hedge timer to
    /// cancel). Nil when there was no race or `task` is none of the attempt's.
    mutating func settleRace(answeredBy task: Int) -> (losers: [Racer], timer: ScheduledTimer?)? {
        guard timers.hedge != nil || !racers.isEmpty else { return nil }
        var losers: [Racer]
        if let index = racers.firstIndex(where: { $0.task.identifier == task }) {
            let winner = racers.remove(at: index)
            losers = leadRecord.map { [Racer(task: self.task, record: $0)] } ?? []
            losers += racers
            (self.task, leadRecord) = (winner.task, winner.record)
        } else if self.task.identifier == task {
            losers = racers
        } else {
            return nil
        }
        defer { (racers, timers.hedge) = ([], nil) }
        return (losers, timers.hedge)
    }

    mutating func removeRacer(at index: Int) -> Racer? {
        racers.indices.contains(index) ? racers.remove(at: index) : nil
    }

    /// The oldest racer leads.
    mutating func promoteRacer() {
        guard !racers.isEmpty else { return }
        let next = racers.removeFirst()
        (task, leadRecord) = (next.task, next.record)
    }

    mutating func takeUnannouncedBytes(at now: TimeInterval) -> Int {
        defer { (unannouncedBytes, lastDataEventAt) = (0, now) }
        return unannouncedBytes
    }
}

/// The timers of an attempt in flight, made once its task is resumed (``RequestOperation``'s
/// `send` makes them, one line each) and held by the in-flight stage alone: a timer added here
/// is cancelled with the rest on every way out of the stage.
struct AttemptTimers {
    /// Ends the attempt at ``RequestOptions/attemptTimeout``.
    var attempt: ScheduledTimer?
    /// Ends the attempt when no byte came for ``RequestOptions/readTimeout``: it fires at most
    /// once per that span, and looks at the flight's `lastProgress` (a byte does not reschedule it).
    var read: ScheduledTimer?
    /// Sends the next hedge.
    var hedge: ScheduledTimer?

}
