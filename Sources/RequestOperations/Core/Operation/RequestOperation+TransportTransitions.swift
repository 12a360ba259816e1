import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transitions of what the transport reports (RequestOperation+TransportCallbacks.swift
/// performs what they answer). Each first asks the machine which copy of the attempt in
/// flight its task is: a late callback of an earlier attempt finds none and changes nothing.
extension RequestOperation {
    /// A redirect of `task`, judged by `RedirectSafety` and the operation's redirect policy.
    struct RedirectJudged: OperationTransition {
        let task: Int
        let response: HTTPURLResponse
        let request: RequestMessage
        let location: String
        let rereadsBodyFile: Bool

        func apply(to state: inout State, of operation: RequestOperation) -> RedirectStep? {
            guard let copy = state.machine.copy(task) else { return nil }
            let attempt = state.number(of: copy)
            let byLead = attempt == nil
            // Redirects not followed (the proxy's policy): the 3xx is the answer wherever it
            // points. Nothing is followed, so a `Location` naming `file:` or an app's own
            // scheme (`com.example.app://oauth?code=…`) chooses nothing here, and its client
            // must see it as the server sent it (it was a 502).
            if operation.options.redirects.followsNone {
                operation.publish(&state, .redirect(status: response.statusCode, location: location, refused: RedirectPolicy.notFollowed), attempt: attempt)
                return .stop
            }
            let sent = state.sent ?? state.outgoing ?? state.request
            var verdict = RedirectSafety.judge(request, original: state.sent?.url, status: response.statusCode,
                                               location: response.headerDictionary.value(forHTTPHeader: "Location"),
                                               streamedBody: sent.body.stream != nil && !rereadsBodyFile,
                                               bodyLost: !(sent.body.data?.isEmpty ?? true) && !operation.environment.transport.resendsBodyOnRedirect)
            if case .follow = verdict, byLead {
                let redirects = state.machine.redirectFollowed(lead: task) ?? 1
                switch operation.options.redirects.judge(number: redirects, from: response.url, to: request.url) {
                case .follow:
                    break
                case .stop:
                    operation.publish(&state, .redirect(status: response.statusCode, location: location, refused: RedirectPolicy.notFollowed), attempt: attempt)
                    return .stop
                case .fail(let code, let reason):
                    verdict = .refuse(code: code, reason: reason)
                }
            }
            switch verdict {
            case .follow(var next, let dropped):
                // A 307/308 sends the same method and body again; FoundationNetworking hands
                // on the next request without its body (seen: the target got 0 bytes).
                if response.statusCode == 307 || response.statusCode == 308, case .none = next.body, let body = sent.body.data {
                    next.body = .data(body)
                }
                return .follow(next, dropped: dropped, byLead: byLead,
                               callerCookie: (state.outgoing ?? state.request).headerFields[.cookie] != nil)
            case .refuse(let code, let reason):
                operation.publish(&state, .redirect(status: response.statusCode, location: location, refused: reason), attempt: attempt)
                // A hedge sent where it must not go ends as cancelled, the others race on; the
                // lead's attempt fails as refused.
                state.machine.stop(lead: task, .redirectRefused(TransportError(code: code.rawValue, message: reason)))
                return .cancel(copy.task)
            }
        }
    }

    /// The redirect of `task` followed (or stopped by the program's policy: `refusal`), said
    /// if the task still races.
    struct RedirectFollowed: OperationTransition {
        let task: Int
        let status: Int
        let location: String
        let dropped: [String]
        let refusal: String?

        func apply(to state: inout State, of operation: RequestOperation) -> Bool {
            guard let copy = state.machine.copy(task) else { return false }
            let attempt = state.number(of: copy)
            if let refusal {
                operation.publish(&state, .redirect(status: status, location: location, refused: refusal), attempt: attempt)
                return false
            }
            operation.publish(&state, .redirect(status: status, location: location, dropped: dropped), attempt: attempt)
            return true
        }
    }

    /// An event of one copy of the attempt in flight (`task`), published as that copy's.
    struct CopyEvent: OperationTransition {
        let task: Int
        let event: RequestEvent.Payload

        func apply(to state: inout State, of operation: RequestOperation) {
            guard let copy = state.machine.copy(task) else { return }
            operation.publish(&state, event, attempt: state.number(of: copy))
        }
    }

    /// The answer of `task` ended with trailers: the answer's, when it is the lead's.
    struct TrailersReceived: OperationTransition {
        let task: Int
        let trailers: HTTPFields

        func apply(to state: inout State, of operation: RequestOperation) {
            guard let copy = state.machine.copy(task) else { return }
            if case .lead = copy { state.answer.trailers = trailers }
            operation.publish(&state, .trailers(side: .response, fields: trailers), attempt: state.number(of: copy))
        }
    }

    /// The transport wrote the request of `task`.
    struct RequestWritten: OperationTransition {
        let task: Int
        let at: TimeInterval

        func apply(to state: inout State, of operation: RequestOperation) {
            switch state.machine.copy(task) {
            case nil:
                return
            case .lead?:
                state.record.requestSentAt = at
                operation.publish(&state, .sent)
            case .racer(_, let racer)?:
                state.records[racer.record].requestSentAt = at
                operation.publish(&state, .sent, attempt: state.records[racer.record].number)
            }
        }
    }

    /// The lead `task` was answered with a challenge the operation refused.
    struct ChallengeRefused: OperationTransition {
        let task: Int

        func apply(to state: inout State, of operation: RequestOperation) {
            state.machine.challengeRefused(lead: task)
        }
    }

    /// The first step of a task's end: a racing hedge that failed leaves the race; for the
    /// lead, the answer's framing is checked and its download taken out, to be moved into
    /// place or removed outside the lock (nil: not one of the attempt's tasks).
    struct TaskEnding: OperationTransition {
        let task: Int
        /// What the transport reported, if it failed.
        let error: TransportError?
        let succeededWithoutError: Bool
        let at: TimeInterval

        func apply(to state: inout State, of operation: RequestOperation) -> Download? {
            switch state.machine.copy(task) {
            case nil:
                return nil
            case .racer(let index, _)?:
                // A hedge that failed before any response: the others race on.
                let reported = error
                let failure = reported.map { AttemptFailure.transport(URLError.Code(rawValue: $0.code) ?? .unknown) }
                operation.hedgeFailed(&state, racer: index, failure: failure, reported: reported)
                return nil
            case .lead?:
                break
            }
            operation.announceData(&state, at: at)
            let status = state.answer.status
            let mismatch = succeededWithoutError ? status.flatMap { status in
                ResponseFraming.mismatch(headers: state.answer.headers, status: status, method: state.sent?.method, received: state.record.bytes)
            } : nil
            // Ended with neither an answer nor an error: FoundationNetworking does so for a
            // redirect whose Location it cannot read (the 3xx is never handed on). No answer
            // is no success.
            let problem = succeededWithoutError && status == nil
                ? TransportError(code: URLError.Code.badServerResponse.rawValue,
                                 message: "the transport ended the request without an answer (FoundationNetworking does so for a redirect whose Location it cannot read)")
                : mismatch.map { TransportError(code: URLError.Code.networkConnectionLost.rawValue, message: $0) }
            let (succeeded, file) = state.machine.leadEnding(task, succeededWithoutError: succeededWithoutError, problem: problem)
            // A download goes into place only when this attempt succeeded; else it goes.
            guard let file else { return Download.none }
            return succeeded ? .keep(file) : .discard(file)
        }
    }

    /// The second step: the download's move said, the attempt judged and its task ended
    /// (nil: it is not the lead's, or a hedge leads now).
    struct TaskEnded: OperationTransition {
        let task: Int
        let error: Error?
        let moved: Result<ResponseFile, ResponseFileError>?
        let at: TimeInterval

        func apply(to state: inout State, of operation: RequestOperation) -> (AttemptID, AttemptEnd, Teardown)? {
            guard state.machine.isLead(task) else { return nil }
            switch moved {
            case nil: break
            case .success(let file)?:
                state.answer.savedTo = file.destination
                if operation.environment.events.subscriberCount > 0 {
                    operation.publish(&state, .responseBody(body: .omitted(bytes: file.bytes, reason: "saved to \(file.destination.path)"),
                                                        totalBytes: file.bytes, truncated: false,
                                                        mediaType: state.answer.headers.value(forHTTPHeader: "Content-Type")))
                }
            case .failure(let failure)?:
                state.machine.stop(lead: task, .local(TransportError(code: URLError.Code.cannotMoveFile.rawValue, message: failure.message)))
            }
            let answered = state.answer.status != nil
            guard let judgement = state.machine.judge(lead: task, answered: answered, error: error) else { return nil }
            let (failure, reported, streaming) = (judgement.failure, judgement.reported, judgement.streaming)
            if failure != nil, !answered, judgement.racing {
                // The lead failed before any response while hedges race it: one of them leads now.
                operation.leadFailedWhileHedged(&state, failure: failure, reported: reported)
                return nil
            }
            state.record.endedAt = at
            // Only when someone reads events: the body is for people and files, and a queue
            // nobody watches (a service at full speed) is spared making it.
            if streaming, operation.environment.events.subscriberCount > 0 {
                let kept = state.answer.keptOfStream, total = state.record.bytes
                let mediaType = state.answer.headers.value(forHTTPHeader: "Content-Type")
                if !kept.isEmpty {
                    // What passed to the caller, up to the cap (kept as it streamed).
                    operation.publish(&state, .responseBody(body: .bytes(kept), totalBytes: total, truncated: kept.count < total, mediaType: mediaType))
                } else if total > 0 {
                    let reason = operation.options.responseBodyCap == 0 ? "streamed to the caller (the body cap is 0)" : "streamed to the caller"
                    operation.publish(&state, .responseBody(body: .omitted(bytes: total, reason: reason), totalBytes: total, truncated: false,
                                                            mediaType: mediaType))
                }
                state.answer.keptOfStream = Data()
            } else if answered, operation.environment.events.subscriberCount > 0,
               let body = RequestOperation.responseBody(state.answer.body, headers: state.answer.headers, cap: operation.options.responseBodyCap) {
                operation.publish(&state, body)
            }
            if operation.environment.events.subscriberCount > 0,
               let kept = state.sent?.body.stream?.parts?.keptForEvents {
                // A streamed upload, as it went (up to the queue's body limit): `queued` said only "a stream".
                operation.publish(&state, .requestBody(body: .bytes(kept.prefix), totalBytes: kept.total, truncated: kept.prefix.count < kept.total,
                                                       mediaType: state.sent?.headerFields[.contentType]))
            }
            if operation.environment.events.subscriberCount > 0,
               let trailers = state.sent?.body.stream?.parts?.trailers {
                operation.publish(&state, .trailers(side: .request, fields: trailers))
            }
            operation.publish(&state, .taskCompleted(error: reported))
            let end = AttemptEnd(failure: failure, taskError: reported, handedOver: streaming, leadRecord: state.machine.leadRecord)
            guard let teardown = state.machine.taskEnded(task, end) else { return nil }
            return (state.machine.id, end, teardown)
        }
    }
}
