import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The flow-control stages of a ``RequestOperation``: before an attempt takes a slot,
/// reactors that hold new requests and the interceptor chain (batches included); after it,
/// the reactors that may act on its result and requeue it.
extension RequestOperation {
    // MARK: - Admission: reactors that hold new requests, then the interceptor chain

    /// Runs before the attempt takes a slot, so a request that waits here holds none.
    func admit(_ id: AttemptID) async {
        for reactor in options.reactors where reactor.options.holdNewRequests {
            guard let run = reactor.currentRun else { continue }
            if let error = await waitForReactor(reactor, run: run, id: id) {
                fail(id, error, reason: "\(error)")
                return
            }
        }

        var request = look { $0.outgoing }
        if request == nil {
            guard let intercepted = await runInterceptors(id) else { return }
            request = intercepted
        }
        if transition(Admitted(request: request, id: id)) { askForSlot(id) }
    }

    /// The request the interceptor chain makes, or nil when the operation ended (failed,
    /// discarded, cancelled) on the way.
    private func runInterceptors(_ id: AttemptID) async -> RequestMessage? {
        let (start, attempt) = look { ($0.request, $0.attempt) }
        // Interceptors are code at the library's edge: each sees the request as a `URLRequest`,
        // and its changes are taken into the fields in their order.
        var request = start
        let context = InterceptionContext(operationID: self.id, attempt: attempt, userInfo: options.userInfo, clock: environment.clock) {
            [weak self] reactor, run in
            guard let self else { return .cancelled(by: "caller") }
            return await waitForReactor(reactor, run: run, id: id)
        }
        chain: for interceptor in options.interceptors {
            let interception: Interception
            do {
                interception = try await interceptor.intercept(request.foundationHead, context: context)
            } catch {
                let failure = (error as? RequestError.Reason) ?? .interceptor(name: interceptor.name, message: "\(error)")
                fail(id, failure, reason: "\(failure)")
                return nil
            }
            guard transition(AnnouncedIfUnderWay(event: .intercepted(by: interceptor.name, command: interception.command.name), id: id)) else { return nil }
            request = request.updated(by: interception.request)
            switch interception.command {
            case .execute:
                continue
            case .forceExecute:
                break chain
            case .discard(let reason):
                end(outcome: .cancelled, error: .cancelled(by: interceptor.name),
                    reason: "discarded by \(interceptor.name): \(reason)", cancelledBy: interceptor.name)
                return nil
            case .hold(let batch):
                guard transition(HeldInBatch(batch: batch.name, id: id)) else { return nil }
                let size = await batch.hold(clock: environment.clock)
                guard size > 0 else { return nil }
                guard transition(ReleasedFromBatch(batch: batch.name, size: size, id: id)) else { return nil }
            }
        }
        return request
    }

    /// Shows the attempt `id` in admission held by `reactor` (it waits for the run), waits
    /// for `run` to end and says how it ended. Returns nil when the run succeeded (the
    /// attempt then goes back to intercepting); else the error to fail with (a cancellation
    /// error when the operation ended meanwhile).
    func waitForReactor(_ reactor: RequestReactor, run: UInt64, id: AttemptID) async -> RequestError.Reason? {
        guard transition(WaitsForReactor(name: reactor.name, id: id)) else { return .cancelled(by: "caller") }
        return await reactorOutcome(reactor, run: run, id: id)
    }

    /// Waits for `run` of `reactor` to end, and says how it ended (an event); nil when it
    /// ended well, else the error to fail with.
    private func reactorOutcome(_ reactor: RequestReactor, run: UInt64, id: AttemptID) async -> RequestError.Reason? {
        let error = await reactor.outcome(of: run)
        let current = transition(ReactorRunEnded(name: reactor.name, error: error, id: id))
        return current ? error : (error ?? .cancelled(by: "caller"))
    }

    /// Ends the operation with `error` if `id` is still the attempt under way (and `applies`
    /// says the machine is where the failure belongs).
    func fail(_ id: AttemptID, _ error: RequestError.Reason, reason: String,
              if applies: @escaping @Sendable (AttemptStateMachine) -> Bool = { _ in true }) {
        if let teardown = transition(Failed(error: error, reason: reason, applies: applies, id: id)) { tearDown(teardown) }
    }

    // MARK: - Reactors

    func react(_ decision: ReactorDecision, reactor: RequestReactor, end: AttemptEnd, id: AttemptID) {
        switch decision {
        case .ignore:
            return
        case .requeue(let reason):
            requeue(id, by: reactor.name, reason: reason, reintercept: true, closing: end)
        case .react(let trigger):
            // The attempt is over: its slot goes back while the reactor works.
            guard let released = transition(ReactorTakesOver(name: reactor.name, end: end, at: environment.now(), id: id)) else { return }
            tearDown(released)
            let run: UInt64, announce: RequestEvent.Payload
            switch reactor.enter(trigger: trigger) {
            case .refused(let error):
                fail(id, error, reason: "\(error)")
                return
            case .started(let started):
                (run, announce) = (started, .reactorStarted(name: reactor.name, trigger: trigger))
            case .joined(let joined):
                (run, announce) = (joined, .reactorWaiting(name: reactor.name))
            }
            guard transition(AnnouncedIfUnderWay(event: announce, id: id)) else { return }
            startWork(id) { [self] in
                if let error = await reactorOutcome(reactor, run: run, id: id) {
                    fail(id, error, reason: "\(error)")
                    return
                }
                if reactor.options.requeue {
                    requeue(id, by: reactor.name, reason: "after \(reactor.name) ran (\(trigger))",
                            reintercept: reactor.options.reinterceptOnRequeue, closing: nil)
                } else {
                    attemptCompleted(end, id: id, askReactors: false, breakpoints: false)
                }
            }
        }
    }

    /// Starts the next attempt at once, without asking the retry policy (and without
    /// counting it against the policy's limit). `closing`: the attempt that ended is closed
    /// first (a requeue straight after the answer; after a reactor's run it was closed then).
    private func requeue(_ id: AttemptID, by reactor: String, reason: String, reintercept: Bool, closing end: AttemptEnd?) {
        let (entry, racers) = transition(Requeued(reactor: reactor, reason: reason, reintercept: reintercept, closing: end,
                                                  needsAdmission: needsAdmission, at: environment.now(), id: id))
        cancelTasks(racers)
        enter(entry)
    }
}
