import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the transport reports about the attempt's task, in its order (redirects, response,
/// data, completion). Each callback first asks the machine which copy of the attempt in
/// flight its task is (``AttemptStateMachine/copy(_:)``): a late callback of an earlier
/// attempt finds none and changes nothing.
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
            guard let copy = state.machine.copy(task) else { return nil }
            let attempt = state.number(of: copy)
            let byLead = attempt == nil
            let sent = state.sent ?? state.outgoing ?? state.request
            var verdict = RedirectSafety.judge(request, original: state.sent?.url, status: response.statusCode,
                                               location: response.headerDictionary.value(forHTTPHeader: "Location"),
                                               streamedBody: sent.httpBodyStream != nil && !rereadsBodyFile,
                                               bodyLost: !(sent.httpBody?.isEmpty ?? true) && !environment.transport.resendsBodyOnRedirect)
            if case .follow = verdict, byLead {
                let redirects = state.machine.inFlight(lead: task) { flight in
                    flight.redirects += 1
                    return flight.redirects
                } ?? 1
                switch options.redirects.judge(number: redirects, from: response.url, to: request.url) {
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
                return .follow(next, dropped: dropped, byLead: byLead,
                               callerCookie: (state.outgoing ?? state.request).value(forHTTPHeaderField: "Cookie") != nil)
            case .refuse(let code, let reason):
                publish(&state, .redirect(status: response.statusCode, location: location, refused: reason), attempt: attempt)
                // A hedge sent where it must not go ends as cancelled, the others race on; the
                // lead's attempt fails as refused.
                state.machine.inFlight(lead: task) { $0.stop(.redirectRefused(TransportError(code: code.rawValue, message: reason))) }
                return .cancel(copy.task)
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
            cancelTasks([refused])
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
                guard let copy = state.machine.copy(task) else { return false }
                let attempt = state.number(of: copy)
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
        case cancel(TransportTask)
        /// Followed, once the program's policy agrees; `byLead`: not a hedge's.
        case follow(URLRequest, dropped: [String], byLead: Bool, callerCookie: Bool)
    }

    func task(_ task: Int, wasInjected rule: FaultRule) {
        state.withLock { state in
            let event = RequestEvent.Payload.injected(fault: rule.effect.summary, rule: rule.match.description, by: rule.setBy)
            guard let copy = state.machine.copy(task) else { return }
            publish(&state, event, attempt: state.number(of: copy))
        }
    }

    func taskDidSendRequest(_ task: Int) {
        state.withLock { state in
            switch state.machine.copy(task) {
            case nil:
                return
            case .lead?:
                state.record.requestSentAt = environment.clock.now()
                publish(&state, .sent)
            case .racer(_, let racer)?:
                state.records[racer.record].requestSentAt = environment.clock.now()
                publish(&state, .sent, attempt: state.records[racer.record].number)
            }
        }
    }

    func task(_ task: Int, didUseConnection connection: Int, reused: Bool) {
        self.task(task, didUseConnection: connection, reused: reused, via: nil)
    }

    func task(_ task: Int, didUseConnection connection: Int, reused: Bool, via proxy: String?) {
        state.withLock { state in
            let event = RequestEvent.Payload.connection(id: connection, reused: reused, proxy: proxy)
            guard let copy = state.machine.copy(task) else { return }
            publish(&state, event, attempt: state.number(of: copy))
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
                state.machine.inFlight(lead: task) { $0.challengeRefused = true }
            }
        }
        return answer
    }

    /// The task ended. In two steps under the lock, with the download's move into place (or
    /// its removal) between them, outside it: the file is the attempt's alone once taken out
    /// of the answer, and no other callback of this task comes after this one.
    func task(_ task: Int, didCompleteWithError error: Error?) {
        let now = environment.clock.now()
        let download = state.withLock { state -> Download? in
            switch state.machine.copy(task) {
            case nil:
                return nil
            case .racer(let index, _)?:
                // A hedge that failed before any response: the others race on.
                let reported = error.map(TransportError.init)
                let failure = reported.map { AttemptFailure.transport(URLError.Code(rawValue: $0.code) ?? .unknown) }
                hedgeFailed(&state, racer: index, failure: failure, reported: reported)
                return nil
            case .lead?:
                break
            }
            announceData(&state, at: now)
            let status = state.answer.status
            let mismatch = error == nil ? status.flatMap { status in
                ResponseFraming.mismatch(headers: state.answer.headers, status: status, method: state.sent?.httpMethod, received: state.record.bytes)
            } : nil
            let succeeded = state.machine.inFlight(lead: task) { flight -> Bool in
                if error == nil, status == nil {
                    // Ended with neither an answer nor an error: FoundationNetworking does so for
                    // a redirect whose Location it cannot read (the 3xx is never handed on). No
                    // answer is no success.
                    flight.stop(.local(TransportError(code: URLError.Code.badServerResponse.rawValue,
                                                      message: "the transport ended the request without an answer (FoundationNetworking does so for a redirect whose Location it cannot read)")))
                }
                if let mismatch { flight.stop(.local(TransportError(code: URLError.Code.networkConnectionLost.rawValue, message: mismatch))) }
                return error == nil && flight.invalid == nil && flight.stop == nil
            } ?? false
            // A download goes into place only when this attempt succeeded; else it goes.
            guard let file = state.answer.file else { return Download.none }
            state.answer.file = nil
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
        let ended = state.withLock { state -> (AttemptID, AttemptEnd, Teardown)? in
            guard state.machine.isLead(task) else { return nil }
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
                state.machine.inFlight(lead: task) { $0.stop(.local(TransportError(code: URLError.Code.cannotMoveFile.rawValue, message: failure.message))) }
            }
            let answered = state.answer.status != nil
            guard let (failure, reported, racing, streaming) = state.machine.inFlight(lead: task, { flight in
                let (failure, reported) = flight.judge(answered: answered, error: error)
                return (failure, reported, !flight.racers.isEmpty && flight.stop != .attemptTimeout, flight.streaming)
            }) else { return nil }
            if failure != nil, !answered, racing {
                // The lead failed before any response while hedges race it: one of them leads now.
                leadFailedWhileHedged(&state, failure: failure, reported: reported)
                return nil
            }
            state.record.endedAt = now
            // Only when someone reads events: the body is for people and files, and a queue
            // nobody watches (a service at full speed) is spared making it.
            if streaming, environment.events.subscriberCount > 0 {
                publish(&state, .responseBody(body: .omitted(bytes: state.record.bytes, reason: "streamed to the caller"),
                                              totalBytes: state.record.bytes, truncated: false,
                                              mediaType: state.answer.headers.value(forHTTPHeader: "Content-Type")))
            } else if answered, environment.events.subscriberCount > 0,
               let body = Self.responseBody(state.answer.body, headers: state.answer.headers, cap: options.responseBodyCap) {
                publish(&state, body)
            }
            publish(&state, .taskCompleted(error: reported))
            let end = AttemptEnd(failure: failure, taskError: reported, handedOver: streaming, leadRecord: state.machine.leadRecord)
            guard let teardown = state.machine.taskEnded(task, end) else { return nil }
            return (state.machine.id, end, teardown)
        }
        guard let (id, end, teardown) = ended else { return }
        tearDown(teardown)
        attemptCompleted(end, id: id)
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
}
