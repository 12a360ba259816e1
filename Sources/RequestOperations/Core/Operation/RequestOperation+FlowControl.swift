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
    func admit(_ token: UInt64) async {
        for reactor in options.reactors where reactor.options.holdNewRequests {
            guard let run = reactor.currentRun else { continue }
            if let error = await waitForReactor(reactor, run: run, token: token, announce: .reactorWaiting(name: reactor.name),
                                                beforeSending: true) {
                fail(token, error, reason: "\(error)")
                return
            }
        }

        var request = state.withLock { $0.outgoing }
        if request == nil {
            guard let intercepted = await runInterceptors(token) else { return }
            request = intercepted
        }
        guard ifCurrent(token, { state -> Bool? in
            guard state.machine.apply(.intercepted) == .acquireSlot else { return nil }
            state.outgoing = request
            return true
        }) != nil else { return }
        acquireSlot(token)
    }

    /// The request the interceptor chain makes, or nil when the operation ended (failed,
    /// discarded, cancelled) on the way.
    private func runInterceptors(_ token: UInt64) async -> URLRequest? {
        let (start, attempt) = state.withLock { ($0.request, $0.attempt) }
        var request = start
        let context = InterceptionContext(operationID: id, attempt: attempt, userInfo: options.userInfo, clock: environment.clock) {
            [weak self] reactor, run in
            guard let self else { return .cancelled(by: "caller") }
            return await waitForReactor(reactor, run: run, token: token, announce: .reactorWaiting(name: reactor.name), beforeSending: true)
        }
        chain: for interceptor in options.interceptors {
            let interception: Interception
            do {
                interception = try await interceptor.intercept(request, context: context)
            } catch {
                let failure = (error as? RequestError.Reason) ?? .interceptor(name: interceptor.name, message: "\(error)")
                fail(token, failure, reason: "\(failure)")
                return nil
            }
            guard withCurrent(token, { publish(&$0, .intercepted(by: interceptor.name, command: interception.command.name)) })
            else { return nil }
            request = interception.request
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
                guard ifCurrent(token, { state -> Bool? in
                    guard state.machine.apply(.hold(batch: batch.name)) == .announce else { return nil }
                    publish(&state, .held(batch: batch.name))
                    return true
                }) != nil else { return nil }
                let size = await batch.hold(clock: environment.clock)
                guard size > 0, ifCurrent(token, { state -> Bool? in
                    guard state.machine.apply(.released) == .announce else { return nil }
                    publish(&state, .released(batch: batch.name, size: size))
                    return true
                }) != nil else { return nil }
            }
        }
        return request
    }

    /// Shows the operation held by `reactor` (`announce`: it started the run, or waits for
    /// it), waits for `run` to end and says how it ended. Returns nil when the run succeeded
    /// (`beforeSending`: the attempt then goes back to intercepting); else the error to fail
    /// with (a cancellation error when the operation ended meanwhile).
    func waitForReactor(_ reactor: RequestReactor, run: UInt64, token: UInt64, announce: RequestEvent.Payload,
                        beforeSending: Bool) async -> RequestError.Reason? {
        guard ifCurrent(token, { state -> Bool? in
            guard state.machine.apply(.waitForReactor(reactor.name)) == .announce else { return nil }
            publish(&state, announce)
            return true
        }) != nil else { return .cancelled(by: "caller") }
        let error = await reactor.outcome(of: run)
        let current = withCurrent(token) { state in
            publish(&state, .reactorFinished(name: reactor.name, outcome: error.map { .failure("\($0)") } ?? .success))
            if error == nil { _ = state.machine.apply(.reactorFinished(beforeSending: beforeSending)) }
        }
        return current ? error : (error ?? .cancelled(by: "caller"))
    }

    /// Ends the operation with `error` if `token` is still current.
    func fail(_ token: UInt64, _ error: RequestError.Reason, reason: String) {
        guard state.withLock({ $0.isCurrent(token: token) }) else { return }
        end(outcome: .failure, error: error, reason: reason, cancelledBy: nil)
    }

    // MARK: - Reactors

    func react(_ decision: ReactorDecision, reactor: RequestReactor, failure: AttemptFailure?, token: UInt64,
               taskError: TransportError?) {
        // The attempt is over: give its slot back while the reactor works.
        let now = environment.clock.now()
        guard let released = ifCurrent(token, { closeAttempt(&$0, failure: failure, at: now) }) else { return }
        tearDown(released)

        switch decision {
        case .ignore:
            return
        case .requeue(let reason):
            requeue(token: token, by: reactor.name, reason: reason, reintercept: true)
        case .react(let trigger):
            let run: UInt64, announce: RequestEvent.Payload
            switch reactor.enter(trigger: trigger) {
            case .refused(let error):
                fail(token, error, reason: "\(error)")
                return
            case .started(let started):
                (run, announce) = (started, .reactorStarted(name: reactor.name, trigger: trigger))
            case .joined(let joined):
                (run, announce) = (joined, .reactorWaiting(name: reactor.name))
            }
            let work = Task { [self] in
                if let error = await waitForReactor(reactor, run: run, token: token, announce: announce, beforeSending: false) {
                    fail(token, error, reason: "\(error)")
                    return
                }
                if reactor.options.requeue {
                    requeue(token: token, by: reactor.name, reason: "after \(reactor.name) ran (\(trigger))",
                            reintercept: reactor.options.reinterceptOnRequeue)
                } else {
                    attemptCompleted(failure, token: token, taskError: taskError, askReactors: false, breakpoints: false)
                }
            }
            keep(work, ifCurrent: token) { $0.waiting = $1 }
        }
    }

    /// Starts the next attempt at once, without asking the retry policy (and without
    /// counting it against the policy's limit).
    private func requeue(token: UInt64, by reactor: String, reason: String, reintercept: Bool) {
        guard withCurrent(token, { state in
            publish(&state, .requeued(by: reactor, reason: reason))
            state.attempt += 1
            state.requeues += 1
        }) else { return }
        beginAttempt(ifCurrent: token, reintercept: reintercept)
    }
}
