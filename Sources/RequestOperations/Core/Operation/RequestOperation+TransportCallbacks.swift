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
    func task(_ task: Int, willRedirect response: HTTPURLResponse, to request: URLRequest) -> URLRequest? {
        // A body file is read again from its start where the transport sends bodies on.
        let rereadsBodyFile = options.bodyFile != nil && environment.transport.resendsBodyOnRedirect
        let (next, refusedTask) = state.withLock { state -> (URLRequest?, TransportTask?) in
            let racer = state.racer(task)
            guard racer != nil || state.isCurrent(task: task) else { return (nil, nil) }
            let attempt = racer.map { state.records[state.current.racers[$0].record].number }
            let location = request.url?.absoluteString ?? ""
            if let jar = environment.cookies, let from = response.url {
                jar.store(responseHeaders: response.headerDictionary, for: from)
            }
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
                    return (nil, nil)
                case .fail(let code, let reason):
                    verdict = .refuse(code: code, reason: reason)
                }
            }
            switch verdict {
            case .follow(var next, let dropped):
                // A 307/308 sends the same method and body again; FoundationNetworking hands
                // on the next request without its body (seen: the target got 0 bytes).
                if response.statusCode == 307 || response.statusCode == 308, next.httpBody == nil,
                   let body = (state.sent ?? state.outgoing ?? state.request).httpBody {
                    next.httpBody = body
                }
                if response.statusCode == 307 || response.statusCode == 308, rereadsBodyFile, let file = options.bodyFile {
                    next.httpBody = nil
                    next.httpBodyStream = BodyFile.reopen(file)
                }
                if racer == nil, let decide = options.redirects.decide {
                    // The program's own word on it (after the credentials left another origin's request).
                    guard let decided = decide(response, next) else {
                        publish(&state, .redirect(status: response.statusCode, location: location, refused: "the redirect policy stopped here"),
                                attempt: attempt)
                        return (nil, nil)
                    }
                    next = decided
                }
                // The queue's cookies for where it goes now (not a Cookie the caller set).
                if environment.cookies != nil, (state.outgoing ?? state.request).value(forHTTPHeaderField: "Cookie") == nil {
                    next.setValue(nil, forHTTPHeaderField: "Cookie")
                    next = withCookies(next)
                }
                publish(&state, .redirect(status: response.statusCode, location: location, dropped: dropped), attempt: attempt)
                return (next, nil)
            case .refuse(let code, let reason):
                publish(&state, .redirect(status: response.statusCode, location: location, refused: reason), attempt: attempt)
                if let racer {
                    // A hedge sent where it must not go: it ends as cancelled, the others race on.
                    return (nil, state.current.racers[racer].task)
                }
                state.current.redirectRefused = TransportError(code: code.rawValue, message: reason)
                return (nil, state.current.task)
            }
        }
        if let refusedTask { cancelTasks([refusedTask]) }
        return next
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

    /// A response of `task`: `take` files it in the answer (false: it is no HTTP response).
    private func received(_ task: Int, expectedBytes: Int?, take: (inout Answer) -> Bool) -> URLSession.ResponseDisposition {
        let (invalidTask, hedges) = state.withLock { state -> (TransportTask?, Teardown?) in
            let now = environment.clock.now()
            // The first response wins: a hedge that answers first leads from now on, and the
            // copies still racing are cancelled.
            // The 3xx of a refused redirect is no answer: the attempt fails as refused.
            guard state.current.redirectRefused == nil || !state.isCurrent(task: task) else { return (nil, nil) }
            let hedges = state.result == nil ? settleHedges(&state, answeredBy: task, at: now) : nil
            guard state.isCurrent(task: task) else { return (nil, hedges) }
            return (validate(&state, expectedBytes: expectedBytes, at: now, take: take), hedges)
        }
        if let hedges { tearDown(hedges) }
        // The `.cancel` disposition is ignored on Linux (the body is read to the end),
        // so the task is cancelled outright.
        if let invalidTask { cancelTasks([invalidTask]) }
        return .allow
    }

    /// Takes in a response of the lead task; returns the task to cancel when it fails
    /// validation and the options say to stop there.
    private func validate(_ state: inout State, expectedBytes: Int?, at now: TimeInterval, take: (inout Answer) -> Bool) -> TransportTask? {
        // Every response starts a new body: on Linux an authentication challenge
        // delivers the 401 response before the real one.
        state.answer.body = Data()
        state.answer.file?.discard()
        state.answer.file = nil
        state.current.invalid = nil
        guard take(&state.answer), let status = state.answer.status else { return nil }
        if let problem = ResponseFraming.lengthProblem(state.answer.headers) {
            // No length to read the body by: FoundationNetworking read on and called it a success.
            state.current.localFailure = TransportError(code: URLError.Code.badServerResponse.rawValue, message: problem)
            return state.current.task
        }
        if options.readTimeout != nil { state.current.lastProgress = now }
        if let destination = options.destination, (200..<300).contains(status) {
            if let limit = options.maxFileBytes, let expectedBytes, expectedBytes > limit {
                // Said before a byte is written: no file is begun for it.
                state.current.localFailure = TransportError(
                    code: URLError.Code.dataLengthExceedsMaximum.rawValue,
                    message: "the answer's \(expectedBytes) bytes are over the \(limit)-byte limit for its file (RequestOptions.maxFileBytes)")
                return state.current.task
            }
            do {
                state.answer.file = try ResponseFile(destination: destination, attempt: state.record.number)
            } catch let error as ResponseFileError {
                state.current.localFailure = TransportError(code: URLError.Code.cannotCreateFile.rawValue, message: error.message)
                return state.current.task
            } catch {}
        }
        state.record.responseAt = now
        state.record.status = status
        state.record.bytes = 0
        state.current.encodedLength = Self.encodedLength(headers: state.answer.headers, expectedBytes: expectedBytes)
        if let jar = environment.cookies, let url = state.answer.url ?? state.sent?.url {
            jar.store(responseHeaders: state.answer.headers, for: url)
        }
        publish(&state, .response(status: status, headers: state.answer.headers, expectedBytes: expectedBytes, httpVersion: state.answer.httpVersion))
        let headers = state.answer.headers
        guard let failure = options.validator.validate(status: status, headers: headers, response: { state.answer.httpURLResponse() }) else {
            if let stream = options.bodyStream, state.answer.file == nil {
                state.current.streaming = true
                stream.deliverHead(status: status, headers: headers)
            }
            return nil
        }
        state.current.invalid = failure
        publish(&state, .validationFailed(reason: failure.summary))
        guard options.cancelOnInvalidResponse else { return nil }
        state.current.cancelledAsInvalid = true
        return state.current.task
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

    func task(_ task: Int, didCompleteWithError error: Error?) {
        let current = state.withLock { state -> (UInt64, AttemptFailure?, TransportError?)? in
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
            if let file = state.answer.file {
                state.answer.file = nil
                if error == nil, state.current.invalid == nil, state.current.localFailure == nil, state.current.redirectRefused == nil,
                   !state.current.timedOut, !state.current.readTimedOut {
                    do {
                        try file.keep()
                        state.answer.savedTo = file.destination
                        if environment.events.subscriberCount > 0 {
                            publish(&state, .responseBody(body: .omitted(bytes: file.bytes, reason: "saved to \(file.destination.path)"),
                                                          totalBytes: file.bytes, truncated: false,
                                                          mediaType: state.answer.headers.value(forHTTPHeader: "Content-Type")))
                        }
                    } catch let failure as ResponseFileError {
                        state.current.localFailure = TransportError(code: URLError.Code.cannotMoveFile.rawValue, message: failure.message)
                    } catch {}
                } else {
                    file.discard()
                }
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
