import Foundation

extension AttemptStateMachine {
    /// Where an attempt is, and what it holds there: a handle lives in the stage that uses it
    /// and nowhere else (AttemptHoldings.swift).
    enum Stage {
        case pending
        case admitting(Admitting)
        case askingForSlot(Asking)
        case preparing(Granted, work: Work?)
        /// What it holds is the machine's ``AttemptStateMachine/flightBox``, set with it.
        case inFlight
        /// The task ended: reactors, a breakpoint and the retry policy decide. The slot is
        /// held until the attempt closes (nil once given back).
        case deciding(Granted?, AttemptEnd)
        /// A reactor's run after the answer; `work` waits for it.
        case reacting(name: String, work: Work?)
        case stopped(breakpoint: Int, StoppedAt)
        case waitingToRetry(until: TimeInterval, timer: ScheduledTimer?, observation: RecoveryObservation?)
        case finished(RequestOutcome)
    }
}

extension AttemptStateMachine.Stage {
    /// The phase the world sees (events, the monitor).
    var phase: RequestPhase {
        switch self {
        case .pending: .pending
        case .admitting(let admitting):
            switch admitting.wait {
            case .interceptors: .intercepting
            case .held(let batch): .held(batch: batch)
            case .reactor(let name): .waitingForReactor(name)
            }
        case .askingForSlot(let asking):
            switch asking.wait {
            case .slot: .waitingForSlot
            case .rateLimit(let host, let until): .waitingForRateLimit(host: host, until: until)
            case .circuit(let host): .waitingForCircuit(host: host)
            }
        case .preparing: .preparing
        case .inFlight, .deciding: .inFlight
        case .reacting(let name, _): .waitingForReactor(name)
        case .stopped(let breakpoint, _): .stoppedAtBreakpoint(breakpoint)
        case .waitingToRetry(let until, _, _): .waitingToRetry(until: until)
        case .finished(let outcome): .finished(outcome)
        }
    }

    /// The attempt has not been sent yet: admission, asking for a slot, preparing, or stopped
    /// before sending (or none has begun).
    var isBeforeSending: Bool {
        switch self {
        case .pending, .admitting, .askingForSlot, .preparing, .stopped(_, .beforeSending): true
        case .inFlight, .deciding, .reacting, .stopped, .waitingToRetry, .finished: false
        }
    }

    var isInFlight: Bool {
        if case .inFlight = self { true } else { false }
    }

    /// What the stage holds: what leaving it lets go of.
    var holdings: Teardown {
        var teardown = Teardown()
        switch self {
        case .pending, .finished, .stopped:
            break
        case .admitting(let admitting):
            teardown.work = admitting.work.map { [$0] } ?? []
        case .askingForSlot(let asking):
            teardown = Teardown(timer: asking.circuitTimer, asking.rateLimitTimer)
            teardown.ticket = asking.ticket
            teardown.pass = asking.pass
            teardown.circuitWait = asking.circuitWait
        case .preparing(let granted, let work):
            teardown.release(granted)
            teardown.work = work.map { [$0] } ?? []
        case .inFlight:
            // What it holds is the machine's flight (``AttemptStateMachine/InFlight/holdings``).
            break
        case .deciding(let granted, _):
            teardown.release(granted)
        case .reacting(_, let work):
            teardown.work = work.map { [$0] } ?? []
        case .waitingToRetry(_, let timer, let observation):
            teardown = Teardown(timer: timer)
            teardown.observation = observation
        }
        return teardown
    }
}
