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

        var request = state.withLock { $0.outgoing }
        if request == nil {
            guard let intercepted = await runInterceptors(id) else { return }
            request = intercepted
        }
        let admitted = state.withLock { state -> Bool in
            guard state.machine.intercepted(of: id) else { return false }
            state.outgoing = request
            return true
        }
        if admitted { askForSlot(id) }
    }

    /// The request the interceptor chain makes, or nil when the operation ended (failed,
    /// discarded, cancelled) on the way.
    private func runInterceptors(_ id: AttemptID) async -> URLRequest? {
        let (start, attempt) = state.withLock { ($0.request, $0.attempt) }
        var request = start
        let context = InterceptionContext(operationID: self.id, attempt: attempt, userInfo: options.userInfo, clock: environment.clock) {
            [weak self] reactor, run in
            guard let self else { return .cancelled(by: "caller") }
            return await waitForReactor(reactor, run: run, id: id)
        }
        chain: for interceptor in options.interceptors {
            let interception: Interception
            do {
                interception = try await interceptor.intercept(request, context: context)
            } catch {
                let failure = (error as? RequestError.Reason) ?? .interceptor(name: interceptor.name, message: "\(error)")
                fail(id, failure, reason: "\(failure)")
                return nil
            }
            let current = state.withLock { state -> Bool in
                guard state.machine.isUnderWay(id) else { return false }
                publish(&state, .intercepted(by: interceptor.name, command: interception.command.name))
                return true
            }
            guard current else { return nil }
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
                let held = state.withLock { state -> Bool in
                    switch state.machine.hold(batch: batch.name, of: id) {
                    case .announce: publish(&state, .held(batch: batch.name))
                    case .stay, .refuse: return false
                    }
                    return true
                }
                guard held else { return nil }
                let size = await batch.hold(clock: environment.clock)
                guard size > 0 else { return nil }
                let released = state.withLock { state -> Bool in
                    switch state.machine.released(of: id) {
                    case .announce: publish(&state, .released(batch: batch.name, size: size))
                    case .stay, .refuse: return false
                    }
                    return true
                }
                guard released else { return nil }
            }
        }
        return request
    }

    /// Shows the attempt `id` in admission held by `reactor` (it waits for the run), waits
    /// for `run` to end and says how it ended. Returns nil when the run succeeded (the
    /// attempt then goes back to intercepting); else the error to fail with (a cancellation
    /// error when the operation ended meanwhile).
    func waitForReactor(_ reactor: RequestReactor, run: UInt64, id: AttemptID) async -> RequestError.Reason? {
        let waits = state.withLock { state -> Bool in
            switch state.machine.waitForReactor(reactor.name, of: id) {
            case .announce: publish(&state, .reactorWaiting(name: reactor.name))
            case .stay: break
            case .refuse: return false
            }
            return true
        }
        guard waits else { return .cancelled(by: "caller") }
        return await reactorOutcome(reactor, run: run, id: id)
    }

    /// Waits for `run` of `reactor` to end, and says how it ended (an event); nil when it
    /// ended well, else the error to fail with.
    private func reactorOutcome(_ reactor: RequestReactor, run: UInt64, id: AttemptID) async -> RequestError.Reason? {
        let error = await reactor.outcome(of: run)
        let current = state.withLock { state -> Bool in
            guard state.machine.isUnderWay(id) else { return false }
            publish(&state, .reactorFinished(name: reactor.name, outcome: error.map { .failure("\($0)") } ?? .success))
            if error == nil {
                switch state.machine.reactorFinished(of: id) {
                case .announce, .stay, .refuse: break
                }
            }
            return true
        }
        return current ? error : (error ?? .cancelled(by: "caller"))
    }

    /// Ends the operation with `error` if `id` is still the attempt under way (and `applies`
    /// says the machine is where the failure belongs).
    func fail(_ id: AttemptID, _ error: RequestError.Reason, reason: String,
              if applies: (AttemptStateMachine) -> Bool = { _ in true }) {
        let teardown = state.withLock { state -> Teardown? in
            guard state.machine.isUnderWay(id), applies(state.machine) else { return nil }
            return endLocked(&state, outcome: .failure, error: error, reason: reason, cancelledBy: nil)
        }
        if let teardown { tearDown(teardown) }
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
            let now = environment.clock.now()
            let released = state.withLock { state -> Teardown? in
                guard state.machine.deciding(of: id) != nil else { return nil }
                var released = Teardown()
                released.tasks = closeRecord(&state, failure: end.failure, at: now)
                guard let slot = state.machine.react(reactor.name, of: id) else { return nil }
                released.merge(slot)
                return released
            }
            guard let released else { return }
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
            let waits = state.withLock { state -> Bool in
                guard state.machine.isUnderWay(id) else { return false }
                publish(&state, announce)
                return true
            }
            guard waits else { return }
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
        let needsAdmission = self.needsAdmission
        let now = environment.clock.now()
        let (entry, racers) = state.withLock { state -> (AttemptStateMachine.Entry, [TransportTask]) in
            let number = state.leadAttempt
            var racers: [TransportTask] = []
            if let end, state.machine.deciding(of: id) != nil { racers = closeRecord(&state, failure: end.failure, at: now) }
            let entry = state.machine.requeue(needsAdmission: needsAdmission, of: id)
            switch entry {
            case .refuse: break
            case .admit, .askForSlot:
                publish(&state, .requeued(by: reactor, reason: reason), attempt: number)
                recordBegun(&state, reintercept: reintercept)
            }
            return (entry, racers)
        }
        cancelTasks(racers)
        enter(entry)
    }
}
