import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Carries out a ``QueueCommand`` on a queue and answers with a typed outcome. Shared by
/// the live monitor and the monitor endpoint, so the two behave alike to the letter.
public struct QueueControl: Sendable {
    public struct Answer: Sendable {
        public var outcome: QueueCommandOutcome
        /// An operation the command added to the queue (a re-run or an edit).
        public var added: RequestOperation?

        /// False when nothing was done.
        public var ok: Bool { outcome.ok }
    }

    public let queue: RequestQueue
    /// Who gives the commands, as cancellations and breakers name them.
    public let actor: String
    /// Whose faults ``QueueCommand/toggleFault(host:)`` sets (``FaultRule/setBy``), so `!`
    /// takes away only this person's fault and a monitor that leaves can have its faults
    /// removed (``removeOwnFaults()``). Default: `actor`.
    public let faultOwner: String

    public init(queue: RequestQueue, actor: String = "monitor", faultOwner: String? = nil) {
        self.queue = queue
        self.actor = actor
        self.faultOwner = faultOwner ?? actor
    }

    /// Carries out `command`. `missing` answers for an operation id the queue does not
    /// know (the endpoint's journal can tell "ended long ago" from "never was").
    public func perform(_ command: QueueCommand,
                        missing: (String) -> QueueCommandOutcome = { .unknownOperation(operation: $0) }) -> Answer {
        let operation = command.operation.flatMap(queue.operation(withID:))
        if let id = command.operation, operation == nil {
            // A row that is not an operation (a proxy's tunnel) can be cancelled, and only that.
            if case .cancel = command, queue.externalRows.cancel(id, by: actor) { return Answer(outcome: .cancelled(operation: id)) }
            return Answer(outcome: missing(id))
        }
        switch command {
        case .retry: return retry(operation!)
        case .cancel: return cancel(operation!)
        case .resend(_, let edited): return resend(operation!, edited: edited)
        case .cancelAll: return cancelAll(queue.operations)
        case .setSuspended(let suspended):
            queue.isSuspended = suspended
            return Answer(outcome: suspended ? .paused : .resumed)
        case .releaseBatches: return Answer(outcome: .released(batches: queue.releaseHeldBatches()))
        case .isolate(let host): return isolate(host: host)
        case .closeCircuit(let host): return closeCircuit(host: host)
        case .toggleFault(let host): return toggleFault(host: host)
        case .clearFaults: return Answer(outcome: .faultsCleared(count: queue.faults.removeAll()))
        case .addBreakpoint(let text):
            do {
                let breakpoint = try Breakpoint(parsing: text, setBy: faultOwner)
                return Answer(outcome: .breakpointSet(id: queue.breakpoints.add(breakpoint), match: text))
            } catch {
                return Answer(outcome: .badMatch(reason: "\(error)"))
            }
        case .setBreakpointEnabled(let id, let enabled):
            return Answer(outcome: queue.breakpoints.setEnabled(id, enabled) ? .breakpointEnabled(id: id, enabled: enabled) : .unknownBreakpoint(id: id))
        case .removeBreakpoint(let id):
            return Answer(outcome: queue.breakpoints.remove(id) ? .breakpointRemoved(id: id) : .unknownBreakpoint(id: id))
        case .clearBreakpoints:
            return Answer(outcome: .breakpointsCleared(count: queue.breakpoints.removeAll(setBy: faultOwner)))
        case .resolveBreakpoint(let id, let resolution):
            if operation?.breakpointStage == .afterResponse, resolution.appliesOnlyBeforeSending {
                return Answer(outcome: .notCarriedOut(reason: "\(id) stopped after its answer: s sends it on to the retry decision, a answers instead, f fails it, X cancels it (e applies before sending)"))
            }
            guard let operation, operation.resolveBreakpoint(resolution, by: actor) else { return Answer(outcome: .notStopped(operation: id)) }
            return Answer(outcome: .breakpointResolved(operation: id, how: resolution.summary))
        }
    }

    /// Removes the faults and breakpoints this actor set (a monitor that detached; the
    /// operations stopped at its breakpoints go on); returns how many.
    @discardableResult
    public func removeOwnFaults() -> Int {
        let mine = queue.faults.list.filter { $0.rule.setBy == faultOwner }
        return mine.filter { queue.faults.remove($0.id) }.count + queue.breakpoints.removeAll(setBy: faultOwner)
    }

    /// Skips a backoff, or runs a finished operation again (as `id~2`).
    private func retry(_ operation: RequestOperation) -> Answer {
        if operation.retryNow() { return Answer(outcome: .retryingNow(operation: operation.id)) }
        guard operation.result != nil else { return Answer(outcome: .notWaitingToRetry(operation: operation.id)) }
        let again = queue.runAgain(operation)
        return Answer(outcome: .runningAgain(operation: operation.id, as: again.id), added: again)
    }

    /// Sends a person's edit of `operation`'s request as a new operation (`id~edit1`).
    private func resend(_ operation: RequestOperation, edited: EditedRequest) -> Answer {
        let sent = queue.runEdited(operation, request: edited.request, attemptTimeout: edited.attemptTimeout, deadline: edited.deadline)
        return Answer(outcome: .sentEdited(operation: operation.id, as: sent.id), added: sent)
    }

    private func cancel(_ operation: RequestOperation) -> Answer {
        guard operation.result == nil else { return Answer(outcome: .alreadyEnded(operation: operation.id)) }
        operation.cancel(by: actor)
        return Answer(outcome: .cancelled(operation: operation.id))
    }

    /// Cancels those of `operations` still running, and every row open that is not an
    /// operation (a proxy's tunnels).
    private func cancelAll(_ operations: [RequestOperation]) -> Answer {
        let running = operations.filter { $0.result == nil }
        running.forEach { $0.cancel(by: actor) }
        return Answer(outcome: .cancelledAll(count: running.count + queue.externalRows.cancelAll(by: actor)))
    }

    /// Forces the circuit breaker of `host` (`host:port`) open until it is closed by hand.
    private func isolate(host: String) -> Answer {
        guard let breaker = queue.environment.circuitBreaker else { return Answer(outcome: .noCircuitBreaker) }
        breaker.isolate(host, by: actor)
        return Answer(outcome: .isolated(host: host))
    }

    /// Closes the circuit breaker of `host`: what it held goes out.
    private func closeCircuit(host: String) -> Answer {
        guard let breaker = queue.environment.circuitBreaker else { return Answer(outcome: .noCircuitBreaker) }
        return Answer(outcome: breaker.close(host, by: actor) ? .circuitClosed(host: host) : .circuitAlreadyClosed(host: host))
    }

    /// Injects a 503 into every request to `host` (`host:port`), or takes away the one this
    /// person set there: the `!` of the Hosts view.
    private func toggleFault(host: String) -> Answer {
        let mine = queue.faults.list.first { $0.rule.setBy == faultOwner && $0.rule.match.description == "host:\(host)" }
        if let mine {
            queue.faults.remove(mine.id)
            return Answer(outcome: .faultRemoved(host: host))
        }
        guard let match = try? RequestMatch("host:\(host)") else { return Answer(outcome: .faultRemoved(host: host)) }
        queue.faults.add(FaultRule(match: match, effect: .status(503, retryAfter: nil), setBy: faultOwner))
        return Answer(outcome: .faultSet(host: host, effect: "status 503"))
    }
}
