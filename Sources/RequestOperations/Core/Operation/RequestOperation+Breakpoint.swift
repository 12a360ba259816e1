import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Breakpoints: an attempt that a breakpoint's match picks stops before it takes a slot
/// (phase ``RequestPhase/stoppedAtBreakpoint(_:)``, event `breakpoint`) and waits for a
/// person's ``BreakpointResolution`` (event `breakpointResolved`).
extension RequestOperation {
    /// Stops the attempt `id` if a breakpoint picks its request; true when it stopped.
    func stopsAtBreakpoint(_ id: AttemptID) -> Bool {
        let points = environment.breakpoints
        guard points.isActive else { return false }
        let request = look { $0.outgoing ?? $0.request }
        guard let entry = points.pick(for: request) else { return false }
        let event = RequestEvent.Payload.breakpoint(id: entry.id, rule: entry.breakpoint.match.description, by: entry.breakpoint.setBy)
        guard let stopped = transition(StoppedAtBreakpoint(breakpoint: entry.id, afterAnswer: false, event: event, id: id)) else { return false }
        tearDown(stopped)
        return true
    }

    /// Stops the attempt `id` after its answer if a breakpoint at that stage picks its
    /// request: the slot goes back now, the answer waits for the person. True when stopped.
    func stopsAfterResponse(_ end: AttemptEnd, id: AttemptID) -> Bool {
        let points = environment.breakpoints
        guard points.isActive else { return false }
        let request = look { $0.sent ?? $0.outgoing ?? $0.request }
        guard let entry = points.pick(for: request, at: .afterResponse) else { return false }
        let event = RequestEvent.Payload.breakpoint(id: entry.id, rule: entry.breakpoint.match.description, by: entry.breakpoint.setBy, afterResponse: true)
        guard let stopped = transition(StoppedAtBreakpoint(breakpoint: entry.id, afterAnswer: true, event: event, id: id)) else { return false }
        tearDown(stopped)
        return true
    }

    /// A breakpoint stops attempt `id` before it is sent or after its answer (`afterAnswer`):
    /// said with `event`, and the deadline's clock stands still. Nil: the attempt is not
    /// where that stop applies.
    struct StoppedAtBreakpoint: OperationTransition {
        let breakpoint: Int
        let afterAnswer: Bool
        let event: RequestEvent.Payload
        let id: AttemptID

        func apply(to state: inout State, of operation: RequestOperation) -> Teardown? {
            let left = afterAnswer ? state.machine.stopAfterAnswer(at: breakpoint, of: id) : state.machine.stopBeforeSending(at: breakpoint, of: id)
            guard var teardown = left else { return nil }
            operation.publish(&state, event)
            teardown.merge(Teardown(timer: operation.pauseDeadline(&state)))
            return teardown
        }
    }

    /// Puts a person's answer in place of the server's (stopped after it) and says so; the
    /// validator judges it as it would the server's, outside the lock (``judgeAnswerInstead``).
    /// (A download the server's answer began was moved into place or removed as its task
    /// ended, before the stop.)
    func answerInstead(_ state: inout State, status: Int, headers: [String: String], body: Data, by actor: String) {
        publish(&state, .injected(fault: "answer \(status) (\(body.count) bytes) instead of the server's", rule: "", by: "breakpoint (\(actor))"))
        let url = state.answer.url ?? state.sent?.url ?? URL(string: "http://injected.invalid/")!
        var fields = headers.map { ($0.key, $0.value) }
        fields.append(("X-Reqtop-Injected", "true"))
        state.answer.take(TransportResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", fields: fields))
        state.answer.body = body
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
    }

    /// The validator's word on a person's answer, asked outside the lock (it is the program's
    /// code); returns how the attempt failed, if it did.
    private func judgeAnswerInstead(_ answer: Answer, id: AttemptID) -> AttemptFailure? {
        var answer = answer
        guard let status = answer.status,
              let failure = options.validator.validate(status: status, headers: answer.headers, response: { answer.httpURLResponse() })
        else { return nil }
        _ = transition(AnnouncedIfUnderWay(event: .validationFailed(reason: failure.summary), id: id))
        return failure
    }

    /// What a resolved stop leads to (after the lock).
    enum BreakpointNext {
        case cancel
        case proceed(AttemptStateMachine.Resume)
        /// On from the answer, with how the attempt ended (or the person said it did).
        case decide(AttemptID, AttemptEnd)
        /// A person's answer, to be judged by the validator.
        case answered(AttemptID, AttemptEnd, Answer)
    }

    /// A person resolves the stop at a breakpoint: said, and what it leads to (nil: the
    /// operation is not stopped, or `resolution` does not apply where it is).
    struct BreakpointResolved: OperationTransition {
        let resolution: BreakpointResolution
        let actor: String
        let needsAdmission: Bool

        func apply(to state: inout State, of operation: RequestOperation) -> BreakpointNext? {
            guard !state.hasEnded, let stage = state.machine.breakpointStage else { return nil }
            if stage == .afterResponse, case .edit = resolution { return nil }
            operation.publish(&state, .breakpointResolved(how: resolution.summary, by: actor))
            if case .cancel = resolution { return .cancel }
            let resume = state.machine.resolveBreakpoint(needsAdmission: needsAdmission)
            switch resume {
            case .refuse:
                return nil
            case .decide(let id, var end):
                switch resolution {
                case .fail(let code):
                    end.failure = .transport(code)
                    end.taskError = TransportError(code: code.rawValue, message: "\(TransportError.describe(code)) (failed at a breakpoint by \(actor))")
                    return .decide(id, end)
                case .respond(let status, let headers, let body):
                    operation.answerInstead(&state, status: status, headers: headers, body: body, by: actor)
                    return .answered(id, end, state.answer)
                case .proceed, .edit, .cancel:
                    return .decide(id, end)
                }
            case .admit, .askForSlot:
                if case .edit(let edited) = resolution {
                    // The fields a person left alone keep their order and spelling.
                    state.request = state.request.updated(by: edited.request)
                    state.outgoing = nil
                }
                state.machine.force(resolution.fault(by: actor))
                return .proceed(resume)
            }
        }
    }

    /// Where the operation is stopped, if it is: before sending or after an answer.
    public var breakpointStage: Breakpoint.Stage? {
        look { state in !state.hasEnded ? state.machine.breakpointStage : nil }
    }

    /// Resolves the stop at a breakpoint: the attempt goes on (as it is, edited, or answered
    /// or failed in the server's place), or the operation is cancelled. After an answer,
    /// `.proceed` goes on to reactors and the retry decision with it, `.respond` puts the
    /// person's answer in its place, `.fail` fails the attempt with that error instead; `.edit`
    /// does not apply (the request went). False when the operation is not stopped at one, or
    /// the resolution does not apply where it is.
    @discardableResult
    public func resolveBreakpoint(_ resolution: BreakpointResolution, by actor: String = "library") -> Bool {
        let next = transition(BreakpointResolved(resolution: resolution, actor: actor, needsAdmission: needsAdmission))
        // The deadline's clock runs again from where it stood.
        if case .cancel? = next {} else if next != nil { resumeDeadline() }
        switch next {
        case nil: return false
        case .cancel?: cancel(by: actor)
        case .proceed(.admit(let id))?: startAdmission(id)
        case .proceed(.askForSlot(let id))?: askForSlot(id)
        case .proceed(.refuse)?, .proceed(.decide)?: break
        case .decide(let id, let end)?: attemptCompleted(end, id: id, breakpoints: false)
        case .answered(let id, var end, let answer)?:
            end.failure = judgeAnswerInstead(answer, id: id)
            end.taskError = nil
            attemptCompleted(end, id: id, breakpoints: false)
        }
        return true
    }
}
