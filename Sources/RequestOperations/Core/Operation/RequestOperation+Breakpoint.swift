import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Breakpoints: an attempt that a breakpoint's match picks stops before it takes a slot
/// (phase ``RequestPhase/stoppedAtBreakpoint(_:)``, event `breakpoint`) and waits for a
/// person's ``BreakpointResolution`` (event `breakpointResolved`).
extension RequestOperation {
    /// Stops the attempt `token` if a breakpoint picks its request; true when it stopped.
    func stopsAtBreakpoint(_ token: UInt64) -> Bool {
        let points = environment.breakpoints
        guard points.isActive else { return false }
        let request = state.withLock { $0.outgoing ?? $0.request }
        guard let entry = points.pick(for: request) else { return false }
        let paused = ifCurrent(token) { state -> ScheduledTimer?? in
            guard state.machine.apply(.stopAtBreakpoint(entry.id, afterAnswer: false)) == .announce else { return nil }
            publish(&state, .breakpoint(id: entry.id, rule: entry.breakpoint.match.description, by: entry.breakpoint.setBy))
            return .some(pauseDeadline(&state))
        }
        guard let paused else { return false }
        paused?.cancel()
        return true
    }

    /// Stops the attempt `token` after its answer if a breakpoint at that stage picks its
    /// request: the slot goes back now, the answer waits for the person. True when stopped.
    func stopsAfterResponse(_ failure: AttemptFailure?, token: UInt64, taskError: TransportError?) -> Bool {
        let points = environment.breakpoints
        guard points.isActive else { return false }
        let request = state.withLock { $0.sent ?? $0.outgoing ?? $0.request }
        guard let entry = points.pick(for: request, at: .afterResponse) else { return false }
        let slot = ifCurrent(token) { state -> (held: Bool, host: String?, deadline: ScheduledTimer?)? in
            guard state.machine.apply(.stopAtBreakpoint(entry.id, afterAnswer: true)) == .announce else { return nil }
            state.current.stoppedAnswer = (failure, taskError)
            defer { state.current.slotHeld = false }
            publish(&state, .breakpoint(id: entry.id, rule: entry.breakpoint.match.description, by: entry.breakpoint.setBy, afterResponse: true))
            return (state.current.slotHeld, state.current.slotHost, pauseDeadline(&state))
        }
        guard let slot else { return false }
        slot.deadline?.cancel()
        if slot.held { environment.gate?.release(host: slot.host) }
        return true
    }

    /// Puts a person's answer in place of the server's (stopped after it) and says so; the
    /// validator judges it as it would the server's, outside the lock (``judgeAnswerInstead``).
    /// Returns a partial download the server's answer had begun, to remove outside the lock.
    private func answerInstead(_ state: inout State, status: Int, headers: [String: String], body: Data, by actor: String) -> ResponseFile? {
        publish(&state, .injected(fault: "answer \(status) (\(body.count) bytes) instead of the server's", rule: "", by: "breakpoint (\(actor))"))
        let url = state.answer.url ?? state.sent?.url ?? URL(string: "http://injected.invalid/")!
        var fields = headers.map { ($0.key, $0.value) }
        fields.append(("X-Reqtop-Injected", "true"))
        state.answer.take(TransportResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", fields: fields))
        state.answer.body = body
        let partial = state.answer.file
        state.answer.file = nil
        state.answer.savedTo = nil
        state.record.status = status
        publish(&state, .response(status: status, headers: state.answer.headers, expectedBytes: body.count))
        // The answer's body as a transport's is told: every view, event and recording then
        // shows this answer, not the server's one it replaced.
        if !body.isEmpty { publish(&state, .data(bytes: body.count)) }
        if environment.events.subscriberCount > 0,
           let event = Self.responseBody(body, headers: state.answer.headers, cap: options.responseBodyCap) {
            publish(&state, event)
        }
        return partial
    }

    /// The validator's word on a person's answer, asked outside the lock (it is the program's
    /// code); returns how the attempt failed, if it did.
    private func judgeAnswerInstead(_ answer: Answer, token: UInt64) -> AttemptFailure? {
        var answer = answer
        guard let status = answer.status,
              let failure = options.validator.validate(status: status, headers: answer.headers, response: { answer.httpURLResponse() })
        else { return nil }
        withCurrent(token) { publish(&$0, .validationFailed(reason: failure.summary)) }
        return failure
    }

    /// Where the operation is stopped, if it is: before sending or after an answer.
    public var breakpointStage: Breakpoint.Stage? {
        state.withLock { state in state.result == nil ? state.machine.breakpointStage : nil }
    }

    /// Resolves the stop at a breakpoint: the attempt goes on (as it is, edited, or answered
    /// or failed in the server's place), or the operation is cancelled. After an answer,
    /// `.proceed` goes on to reactors and the retry decision with it, `.respond` puts the
    /// person's answer in its place, `.fail` fails the attempt with that error instead; `.edit`
    /// does not apply (the request went). False when the operation is not stopped at one, or
    /// the resolution does not apply where it is.
    @discardableResult
    public func resolveBreakpoint(_ resolution: BreakpointResolution, by actor: String = "library") -> Bool {
        let needsAdmission = !options.interceptors.isEmpty || options.reactors.contains { $0.options.holdNewRequests }
        enum Next {
            case cancel, proceed(UInt64, AttemptStateMachine.Action), decide(UInt64, AttemptFailure?, TransportError?)
            /// A person's answer, to be judged by the validator.
            case answered(UInt64, Answer, partial: ResponseFile?)
        }
        let next = state.withLock { state -> Next? in
            guard state.result == nil, let stage = state.machine.breakpointStage else { return nil }
            if stage == .afterResponse, case .edit = resolution { return nil }
            publish(&state, .breakpointResolved(how: resolution.summary, by: actor))
            if case .cancel = resolution { return .cancel }
            let action = state.machine.apply(.resolveBreakpoint(needsAdmission: needsAdmission))
            if action == .decide, let stopped = state.current.stoppedAnswer {
                state.current.stoppedAnswer = nil
                switch resolution {
                case .fail(let code):
                    return .decide(state.token, .transport(code), TransportError(code: code.rawValue, message: "\(TransportError.describe(code)) (failed at a breakpoint by \(actor))"))
                case .respond(let status, let headers, let body):
                    let partial = answerInstead(&state, status: status, headers: headers, body: body, by: actor)
                    return .answered(state.token, state.answer, partial: partial)
                case .proceed, .edit, .cancel:
                    return .decide(state.token, stopped.failure, stopped.taskError)
                }
            }
            if case .edit(let edited) = resolution {
                state.request = edited.request
                state.outgoing = nil
            }
            state.current.forcedFault = resolution.fault(by: actor)
            return .proceed(state.token, action)
        }
        // The deadline's clock runs again from where it stood.
        if case .cancel? = next {} else if next != nil { resumeDeadline() }
        switch next {
        case nil: return false
        case .cancel?: cancel(by: actor)
        case .proceed(let token, let action)?: proceed(token, action)
        case .decide(let token, let failure, let error)?: attemptCompleted(failure, token: token, taskError: error, breakpoints: false)
        case .answered(let token, let answer, let partial)?:
            partial?.discard()
            attemptCompleted(judgeAnswerInstead(answer, token: token), token: token, taskError: nil, breakpoints: false)
        }
        return true
    }
}
