import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the transport reports about the attempt's task, in its order (redirects, response,
/// data, completion). Each callback first checks that its task is still the attempt's
/// (``State/isCurrent(task:)``): a late callback of an earlier attempt changes nothing.
extension RequestOperation {
    /// A redirect the transport would follow: judged by `RedirectSafety` (the one policy
    /// for every transport). The request returned is followed; nil is not, and a refused
    /// redirect fails the attempt (its task is cancelled, its 3xx is not taken as the answer).
    ///
    /// Judged under the lock; the cookie jar, the body file read again and the program's own
    /// ``RedirectPolicy/decide`` run outside it (the program's code may read the operation),
    /// and the lock is taken again to publish the redirect if the task is still racing.
    func task(_ task: Int, willRedirect response: HTTPURLResponse, to request: URLRequest) -> URLRequest? {
        // A body file is read again from its start where the transport sends bodies on.
        let rereadsBodyFile = options.bodyFile != nil && environment.transport.resendsBodyOnRedirect
        let location = request.url?.absoluteString ?? ""
        let judged = state.withLock { state -> RedirectStep? in
            let racer = state.racer(task)
            guard racer != nil || state.isCurrent(task: task) else { return nil }
            let attempt = racer.map { state.records[state.current.racers[$0].record].number }
            let sent = state.sent ?? state.outgoing ?? state.request
            var verdict = RedirectSafety.judge(request, original: state.sent?.url, status: response.statusCode,
                                               location: response.headerDictionary.value(forHTTPHeader: "Location"),
                                               streamedBody: sent.httpBodyStream != nil && !rereadsBodyFile,
                                               bodyLost: !(sent.httpBody?.isEmpty ?? true) && !environment.transport.resendsBodyOnRedirect)
            if case .follow = verdict, racer == nil {
                state.current.redirects += 1
                switch options.redirects.judge(number: state.current.redirects, from: response.url, to: request.url) {
                case .follow:
                    break
                case .stop:
                    publish(&state, .redirect(status: response.statusCode, location: location, refused: "redirects are not followed"), attempt: attempt)
                    return .stop
                case .fail(let code, let reason):
                    verdict = .refuse(code: code, reason: reason)
                }
            }
            switch verdict {
            case .follow(var next, let dropped):
                // A 307/308 sends the same method and body again; FoundationNetworking hands
                // on the next request without its body (seen: the target got 0 bytes).
                if response.statusCode == 307 || response.statusCode == 308, next.httpBody == nil, let body = sent.httpBody {
                    next.httpBody = body
                }
                return .follow(next, dropped: dropped, byLead: racer == nil,
                               callerCookie: (state.outgoing ?? state.request).value(forHTTPHeaderField: "Cookie") != nil)
            case .refuse(let code, let reason):
                publish(&state, .redirect(status: response.statusCode, location: location, refused: reason), attempt: attempt)
                if let racer {
                    // A hedge sent where it must not go: it ends as cancelled, the others race on.
                    return .cancel(state.current.racers[racer].task)
                }
                state.current.redirectRefused = TransportError(code: code.rawValue, message: reason)
                return .cancel(state.current.task)
            }
        }
        guard let judged else { return nil }
        if let jar = environment.cookies, let from = response.url {
            jar.store(responseHeaders: response.headerDictionary, for: from)
        }
        switch judged {
        case .stop:
            return nil
        case .cancel(let refused):
            if let refused { cancelTasks([refused]) }
            return nil
        case .follow(var next, let dropped, let byLead, let callerCookie):
            if response.statusCode == 307 || response.statusCode == 308, rereadsBodyFile, let file = options.bodyFile {
                next.httpBody = nil
                next.httpBodyStream = BodyFile.reopen(file)
            }
            var refusal: String?
            if byLead, let decide = options.redirects.decide {
                // The program's own word on it (after the credentials left another origin's request).
                if let decided = decide(response, next) { next = decided } else { refusal = "the redirect policy stopped here" }
            }
            // The queue's cookies for where it goes now (not a Cookie the caller set).
            if refusal == nil, environment.cookies != nil, !callerCookie {
                next.setValue(nil, forHTTPHeaderField: "Cookie")
                next = withCookies(next)
            }
            let followed = state.withLock { state -> Bool in
                let racer = state.racer(task)
                guard racer != nil || state.isCurrent(task: task) else { return false }
                let attempt = racer.map { state.records[state.current.racers[$0].record].number }
                if let refusal {
                    publish(&state, .redirect(status: response.statusCode, location: location, refused: refusal), attempt: attempt)
                    return false
                }
                publish(&state, .redirect(status: response.statusCode, location: location, dropped: dropped), attempt: attempt)
                return true
            }
            return followed ? next : nil
        }
    }

    /// What the lock decided of a redirect.
    private enum RedirectStep {
        /// Not followed, and the 3xx is the answer.
        case stop
        /// Refused: the task is cancelled (the lead's attempt fails as refused).
        case cancel(TransportTask?)
        /// Followed, once the program's policy agrees; `byLead`: not a hedge's.
        case follow(URLRequest, dropped: [String], byLead: Bool, callerCookie: Bool)
    }

    func task(_ task: Int, wasInjected rule: FaultRule) {
        state.withLock { state in
            let event = RequestEvent.Payload.injected(fault: rule.effect.summary, rule: rule.match.description, by: rule.setBy)
            if let racer = state.racer(task) {
                publish(&state, event, attempt: state.records[state.current.racers[racer].record].number)
                return
            }
            guard state.isCurrent(task: task) else { return }
            publish(&state, event)
        }
    }

    func taskDidSendRequest(_ task: Int) {
        state.withLock { state in
            if let racer = state.racer(task) {
                let record = state.current.racers[racer].record
                state.records[record].requestSentAt = environment.clock.now()
                publish(&state, .sent, attempt: state.records[record].number)
                return
            }
            guard state.isCurrent(task: task) else { return }
            state.record.requestSentAt = environment.clock.now()
            publish(&state, .sent)
        }
    }

    func task(_ task: Int, didUseConnection connection: Int, reused: Bool) {
        self.task(task, didUseConnection: connection, reused: reused, via: nil)
    }

    func task(_ task: Int, didUseConnection connection: Int, reused: Bool, via proxy: String?) {
        state.withLock { state in
            let event = RequestEvent.Payload.connection(id: connection, reused: reused, proxy: proxy)
            if let racer = state.racer(task) {
                publish(&state, event, attempt: state.records[state.current.racers[racer].record].number)
                return
            }
            guard state.isCurrent(task: task) else { return }
            publish(&state, event)
        }
    }

    func task(_ task: Int, didReceive response: URLResponse) -> URLSession.ResponseDisposition {
        let expected = response.expectedContentLength >= 0 ? Int(response.expectedContentLength) : nil
        return received(task, expectedBytes: expected) { answer in
            guard let http = response as? HTTPURLResponse else { return false }
            answer.take(http)
            return true
        }
    }

    func task(_ task: Int, didReceive response: TransportResponse) -> URLSession.ResponseDisposition {
        received(task, expectedBytes: response.expectedContentLength) { answer in
            answer.take(response)
            return true
        }
    }

    func task(_ task: Int, didReceive challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        // Default handling can hang forever on Linux (swift-corelibs-foundation before PR
        // 5457). With no credential to offer, the 401 itself is the answer.
        let answer = options.challengeHandler?(challenge) ?? (.rejectProtectionSpace, nil)
        if answer.0 == .rejectProtectionSpace || answer.0 == .cancelAuthenticationChallenge {
            state.withLock { state in
                if state.isCurrent(task: task) { state.current.challengeRefused = true }
            }
        }
        return answer
    }

    /// The task ended. In two steps under the lock, with the download's move into place (or
    /// its removal) between them, outside it: the file is the attempt's alone once taken out
    /// of the answer, and no other callback of this task comes after this one.
    func task(_ task: Int, didCompleteWithError error: Error?) {
        let download = state.withLock { state -> Download? in
            if let racer = state.racer(task) {
                // A hedge that failed before any response: the others race on.
                let (failure, reported) = Self.judge(AttemptState(), answered: false, error: error)
                hedgeFailed(&state, racer: racer, failure: failure, reported: reported)
                return nil
            }
            guard state.isCurrent(task: task) else { return nil }
            if state.current.unannouncedBytes > 0 { announceData(&state, at: environment.clock.now()) }
            if error == nil, state.current.localFailure == nil, state.answer.status == nil, state.current.redirectRefused == nil {
                // Ended with neither an answer nor an error: FoundationNetworking does so for a
                // redirect whose Location it cannot read (the 3xx is never handed on). No
                // answer is no success.
                state.current.localFailure = TransportError(code: URLError.Code.badServerResponse.rawValue,
                                                            message: "the transport ended the request without an answer (FoundationNetworking does so for a redirect whose Location it cannot read)")
            }
            if error == nil, state.current.localFailure == nil, let status = state.answer.status,
               let problem = ResponseFraming.mismatch(headers: state.answer.headers, status: status, method: state.sent?.httpMethod,
                                                      received: state.record.bytes) {
                state.current.localFailure = TransportError(code: URLError.Code.networkConnectionLost.rawValue, message: problem)
            }
            // A download goes into place only when this attempt succeeded; else it goes.
            guard let file = state.answer.file else { return Download.none }
            state.answer.file = nil
            let succeeded = error == nil && state.current.invalid == nil && state.current.localFailure == nil
                && state.current.redirectRefused == nil && !state.current.timedOut && !state.current.readTimedOut
            return succeeded ? .keep(file) : .discard(file)
        }
        guard let download else { return }
        var moved: Result<ResponseFile, ResponseFileError>?
        switch download {
        case .none: break
        case .discard(let file): file.discard()
        case .keep(let file):
            do {
                try file.keep()
                moved = .success(file)
            } catch let failure as ResponseFileError {
                moved = .failure(failure)
            } catch {}
        }
        let current = state.withLock { state -> (UInt64, AttemptFailure?, TransportError?)? in
            guard state.isCurrent(task: task) else { return nil }
            switch moved {
            case nil: break
            case .success(let file)?:
                state.answer.savedTo = file.destination
                if environment.events.subscriberCount > 0 {
                    publish(&state, .responseBody(body: .omitted(bytes: file.bytes, reason: "saved to \(file.destination.path)"),
                                                  totalBytes: file.bytes, truncated: false,
                                                  mediaType: state.answer.headers.value(forHTTPHeader: "Content-Type")))
                }
            case .failure(let failure)?:
                state.current.localFailure = TransportError(code: URLError.Code.cannotMoveFile.rawValue, message: failure.message)
            }
            let (failure, reported) = Self.judge(state.current, answered: state.answer.status != nil, error: error)
            if failure != nil, state.answer.status == nil, !state.current.timedOut, !state.current.racers.isEmpty {
                // The lead failed before any response while hedges race it: one of them leads now.
                leadFailedWhileHedged(&state, failure: failure, reported: reported)
                return nil
            }
            state.current.task = nil
            state.record.endedAt = environment.clock.now()
            // Only when someone reads events: the body is for people and files, and a queue
            // nobody watches (a service at full speed) is spared making it.
            if state.current.streaming, environment.events.subscriberCount > 0 {
                publish(&state, .responseBody(body: .omitted(bytes: state.record.bytes, reason: "streamed to the caller"),
                                              totalBytes: state.record.bytes, truncated: false,
                                              mediaType: state.answer.headers.value(forHTTPHeader: "Content-Type")))
            } else if state.answer.status != nil, environment.events.subscriberCount > 0,
               let body = Self.responseBody(state.answer.body, headers: state.answer.headers, cap: options.responseBodyCap) {
                publish(&state, body)
            }
            publish(&state, .taskCompleted(error: reported))
            return (state.token, failure, reported)
        }
        guard let (token, failure, reported) = current else { return }
        attemptCompleted(failure, token: token, taskError: reported)
    }

    /// What becomes of an attempt's download when its task ends (done outside the lock).
    private enum Download {
        case none
        case keep(ResponseFile)
        case discard(ResponseFile)
    }

    /// The `responseBody` event for an attempt's answer: up to `cap` bytes of it; nil when
    /// it is empty or the cap is 0.
    static func responseBody(_ body: Data, headers: [String: String], cap: Int) -> RequestEvent.Payload? {
        guard cap > 0, !body.isEmpty else { return nil }
        let kept = body.count <= cap ? body : Data(body.prefix(cap))
        return .responseBody(body: .bytes(kept), totalBytes: body.count, truncated: kept.count < body.count,
                             mediaType: headers.value(forHTTPHeader: "Content-Type"))
    }

    /// How a finished task went: the failure the retry policy judges (nil: success) and the
    /// error its event reports.
    private static func judge(_ attempt: AttemptState, answered: Bool, error: Error?) -> (AttemptFailure?, TransportError?) {
        var error = error
        // A refused challenge ends the task as "cancelled" on Linux, after the 401
        // response and its body arrived: that response is the answer.
        if attempt.challengeRefused, answered, (error as? URLError)?.code == .cancelled {
            error = nil
        }
        if let refused = attempt.redirectRefused {
            return (.transport(URLError.Code(rawValue: refused.code) ?? .unsupportedURL), refused)
        }
        if let local = attempt.localFailure {
            return (.transport(URLError.Code(rawValue: local.code) ?? .unknown), local)
        }
        if attempt.timedOut {
            return (.transport(.timedOut), TransportError(code: URLError.Code.timedOut.rawValue, message: "timed out (attempt timeout)", timeout: .attempt))
        }
        if attempt.cancelledAsInvalid {
            return (attempt.invalid, error.map(TransportError.init))
        }
        if let error {
            let transport = TransportError(error)
            return (.transport(URLError.Code(rawValue: transport.code) ?? .unknown), transport)
        }
        return (attempt.invalid, nil)
    }
}
