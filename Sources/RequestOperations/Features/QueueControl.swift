import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a person can tell a queue from a monitor, answered with a typed outcome. Shared by
/// the live monitor and the monitor endpoint, so the two behave alike; each finds the
/// operations itself and puts the outcome into words itself (`QueueCommandOutcome.message`
/// in RequestEventFormat).
public struct QueueControl: Sendable {
    public struct Answer: Sendable {
        public var outcome: QueueCommandOutcome
        /// An operation the command added to the queue (a re-run).
        public var added: RequestOperation?

        /// False when nothing was done.
        public var ok: Bool { outcome.ok }
    }

    public let queue: RequestQueue

    public init(queue: RequestQueue) {
        self.queue = queue
    }

    /// Skips a backoff, or runs a finished operation again (as `id~2`).
    public func retry(_ operation: RequestOperation) -> Answer {
        if operation.retryNow() { return Answer(outcome: .retryingNow(operation.id)) }
        guard operation.result != nil else { return Answer(outcome: .notWaitingToRetry(operation.id)) }
        let again = queue.runAgain(operation)
        return Answer(outcome: .runningAgain(operation.id, as: again.id), added: again)
    }

    /// Sends a person's edit of `operation`'s request as a new operation (`id~edit1`).
    public func resend(_ operation: RequestOperation, edited request: URLRequest, attemptTimeout: TimeInterval?,
                       deadline: TimeInterval?) -> Answer {
        let edited = queue.runEdited(operation, request: request, attemptTimeout: attemptTimeout, deadline: deadline)
        return Answer(outcome: .sentEdited(operation.id, as: edited.id), added: edited)
    }

    public func cancel(_ operation: RequestOperation) -> Answer {
        guard operation.result == nil else { return Answer(outcome: .alreadyEnded(operation.id)) }
        operation.cancel(by: "monitor")
        return Answer(outcome: .cancelled(operation.id))
    }

    /// Cancels those of `operations` still running.
    public func cancelAll(_ operations: [RequestOperation]) -> Answer {
        let running = operations.filter { $0.result == nil }
        running.forEach { $0.cancel(by: "monitor") }
        return Answer(outcome: .cancelledAll(count: running.count))
    }

    public func setSuspended(_ suspended: Bool) -> Answer {
        queue.isSuspended = suspended
        return Answer(outcome: suspended ? .paused : .resumed)
    }

    public func releaseBatches() -> Answer {
        Answer(outcome: .released(queue.releaseHeldBatches()))
    }

    /// Forces the circuit breaker of `host` (`host:port`) open until ``closeCircuit(host:)``.
    public func isolate(host: String) -> Answer {
        guard let breaker = queue.environment.circuitBreaker else { return Answer(outcome: .noCircuitBreaker) }
        breaker.isolate(host, by: "monitor")
        return Answer(outcome: .isolated(host))
    }

    /// Injects a 503 into every request to `host` (`host:port`), or takes the one the monitor
    /// set there away: the `!` of the Hosts view.
    public func toggleFault(host: String) -> Answer {
        let mine = queue.faults.list.first { $0.rule.setBy == "monitor" && $0.rule.match.description == "host:\(host)" }
        if let mine {
            queue.faults.remove(mine.id)
            return Answer(outcome: .faultRemoved(host))
        }
        guard let match = try? RequestMatch("host:\(host)") else { return Answer(outcome: .faultRemoved(host)) }
        queue.faults.add(FaultRule(match: match, effect: .status(503, retryAfter: nil), setBy: "monitor"))
        return Answer(outcome: .faultSet(host, "status 503"))
    }

    /// Removes every injected fault.
    public func clearFaults() -> Answer {
        Answer(outcome: .faultsCleared(count: queue.faults.removeAll()))
    }

    /// Closes the circuit breaker of `host`: what it held goes out.
    public func closeCircuit(host: String) -> Answer {
        guard let breaker = queue.environment.circuitBreaker else { return Answer(outcome: .noCircuitBreaker) }
        return Answer(outcome: breaker.close(host, by: "monitor") ? .circuitClosed(host) : .circuitAlreadyClosed(host))
    }
}

/// How a monitor's command went, for the monitor and the endpoint to put into words.
public enum QueueCommandOutcome: Sendable, Equatable {
    /// The operation skipped its backoff.
    case retryingNow(String)
    /// A finished operation runs again under a new id.
    case runningAgain(String, as: String)
    /// A person's edit of an operation's request was sent under a new id.
    case sentEdited(String, as: String)
    case notWaitingToRetry(String)
    case cancelled(String)
    case alreadyEnded(String)
    case cancelledAll(count: Int)
    case paused
    case resumed
    /// The batches released and how many requests each let go; empty when none held any.
    case released([ReleasedBatch])
    /// No operation with this id in the queue (or among those it remembers).
    case unknownOperation(String)
    /// The host's breaker was forced open.
    case isolated(String)
    /// The host's breaker was closed by hand.
    case circuitClosed(String)
    case circuitAlreadyClosed(String)
    /// The queue runs without circuit breakers.
    case noCircuitBreaker
    /// A fault is injected into every request to the host (`host:port`, what).
    case faultSet(String, String)
    case faultRemoved(String)
    case faultsCleared(count: Int)
    /// This program takes no faults from an attached monitor.
    case faultsNotAccepted

    /// False when nothing was done.
    public var ok: Bool {
        switch self {
        case .notWaitingToRetry, .alreadyEnded, .unknownOperation, .circuitAlreadyClosed, .noCircuitBreaker, .faultsNotAccepted: false
        default: true
        }
    }
}

/// One batch released by hand.
public struct ReleasedBatch: Sendable, Equatable {
    public var name: String
    public var count: Int

    public init(name: String, count: Int) {
        self.name = name
        self.count = count
    }
}
