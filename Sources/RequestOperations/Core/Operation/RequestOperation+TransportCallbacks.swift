import Foundation
import HTTPTypes
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
    func task(_ task: Int, willRedirect response: HTTPURLResponse, to request: RequestMessage) -> RequestMessage? {
        // A body file is read again from its start where the transport sends bodies on.
        let rereadsBodyFile = options.bodyFile != nil && environment.transport.resendsBodyOnRedirect
        let location = request.url.absoluteString
        let judged = transition(RedirectJudged(task: task, response: response, request: request, location: location, rereadsBodyFile: rereadsBodyFile))
        guard let judged else { return nil }
        assertOutsideTransition()
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
                next.body = BodyFile.reopen(file)
            }
            var refusal: String?
            if byLead, let decide = options.redirects.decide {
                // The program's own word on it (after the credentials left another origin's request).
                if let decided = decide(response, next.foundationHead) { next = next.updated(by: decided) } else { refusal = "the redirect policy stopped here" }
            }
            // The queue's cookies for where it goes now (not a Cookie the caller set).
            if refusal == nil, environment.cookies != nil, !callerCookie {
                next.headerFields[.cookie] = nil
                next = withCookies(next)
            }
            let followed = transition(RedirectFollowed(task: task, status: response.statusCode, location: location, dropped: dropped, refusal: refusal))
            return followed ? next : nil
        }
    }

    /// What the lock decided of a redirect.
    enum RedirectStep {
        /// Not followed, and the 3xx is the answer.
        case stop
        /// Refused: the task is cancelled (the lead's attempt fails as refused).
        case cancel(TransportTask)
        /// Followed, once the program's policy agrees; `byLead`: not a hedge's.
        case follow(RequestMessage, dropped: [String], byLead: Bool, callerCookie: Bool)
    }

    func task(_ task: Int, wasInjected rule: FaultRule) {
        let event = RequestEvent.Payload.injected(fault: rule.effect.summary, rule: rule.match.description, by: rule.setBy)
        transition(CopyEvent(task: task, event: event))
    }

    func taskDidSendRequest(_ task: Int) {
        transition(RequestWritten(task: task, at: environment.now()))
    }

    func task(_ task: Int, didUseConnection connection: Int, reused: Bool) {
        self.task(task, didUseConnection: connection, reused: reused, via: nil)
    }

    /// The answer's trailers: kept for the result (a proxy writes them after the body) and
    /// published, if `task` is a copy still in flight.
    func task(_ task: Int, didReceiveTrailers trailers: HTTPFields) {
        transition(TrailersReceived(task: task, trailers: trailers))
    }

    func task(_ task: Int, didUseConnection connection: Int, reused: Bool, via proxy: String?) {
        transition(CopyEvent(task: task, event: .connection(id: connection, reused: reused, proxy: proxy)))
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
            transition(ChallengeRefused(task: task))
        }
        return answer
    }

    /// The task ended. In two steps under the lock, with the download's move into place (or
    /// its removal) between them, outside it: the file is the attempt's alone once taken out
    /// of the answer, and no other callback of this task comes after this one.
    func task(_ task: Int, didCompleteWithError error: Error?) {
        let now = environment.now()
        let download = transition(TaskEnding(task: task, error: error.map(TransportError.init), succeededWithoutError: error == nil, at: now))
        guard let download else { return }
        assertOutsideTransition()
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
        let ended = transition(TaskEnded(task: task, error: error, moved: moved, at: now))
        guard let (id, end, teardown) = ended else { return }
        tearDown(teardown)
        attemptCompleted(end, id: id)
    }

    /// What becomes of an attempt's download when its task ends (done outside the lock).
    enum Download {
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
