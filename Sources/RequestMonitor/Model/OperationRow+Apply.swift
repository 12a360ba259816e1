import Foundation
import RequestOperations

/// How an event changes a row: the monitor's one reducer per operation.
extension OperationRow {
    /// Applies one of its own events. A packed row is unpacked first (an event after
    /// `finished` is rare: a user's retry of it).
    mutating func apply(_ event: RequestEvent) {
        if live.isEmpty { unpack() }
        keep(event)
        let t = event.time
        switch event.payload {
        case .queued(let method, let url, let headers, let maxAttempts, let body, let options):
            self.method = method
            live[0].requestHeaders = headers
            self.maxAttempts = maxAttempts
            live[0].requestBody = body
            live[0].requestOptions = options
            // Merged programs (`attach --all`) name the program; a proxy's row also its client.
            origin = event.program.map { program in options?.origin.map { "\(program) ‹\($0)›" } ?? program } ?? options?.origin
            setURL(url)
        case .built(let method, let url, let headers, let body):
            self.method = method
            live[0].requestHeaders = headers
            live[0].requestBody = body
            setURL(url)
        case .started:
            closeSegment(at: t)
            state = .preparing
            live[0].heldBy = nil
            attempt = event.attempt
            live[0].retryAt = nil
            segments.append(Segment(kind: .attempt(event.attempt), start: t))
            live[0].attempts.append(Attempt(number: event.attempt, start: t))
        case .preparationFailed(let reason):
            live[0].lastError = reason
            updateAttempt(number: event.attempt) { $0.error = reason }
        case .sent:
            updateAttempt(number: event.attempt) { $0.sentAt = t }
        case .injected(let fault, _, _):
            injected = true
            updateAttempt(number: event.attempt) { $0.injected = fault }
        case .breakpoint(let id, let rule, _, let afterResponse):
            closeSegment(at: t)
            state = .held
            live[0].heldBy = .breakpoint(id: id, rule: rule, afterResponse: afterResponse)
            segments.append(Segment(kind: .wait, start: t))
        case .breakpointResolved(let how, let by):
            closeSegment(at: t)
            state = .queued
            live[0].heldBy = nil
            live[0].reason = "breakpoint: \(how) by \(by)"
        case .connection(let id, let reused, _):
            updateAttempt(number: event.attempt) { $0.connection = $0.connection ?? Connection(at: t, id: id, reused: reused) }
        case .hedged(let racing, _):
            // A copy racing an attempt that has no response yet: an attempt of its own,
            // running alongside (its segment overlaps the one it races).
            attempt = max(attempt, event.attempt)
            live[0].attempts.append(Attempt(number: event.attempt, start: t))
            segments.append(Segment(kind: .attempt(event.attempt), start: t))
            updateAttempt(number: racing) { $0.decision = "hedged by attempt \(event.attempt)" }
        case .taskCreated(_, let url, _):
            updateAttempt(number: event.attempt) { $0.taskAt = $0.taskAt ?? t }
            (live[0].uploadedBytes, live[0].uploadTotal) = (0, nil)
            state = .running
            // A dependent request is built from its parents' results: show what was sent.
            if !url.isEmpty, url != self.url { setURL(url) }
        case .redirect:
            break
        case .response(let status, let headers, let expected, let version):
            // A second answer on one attempt is a person's, given in the server's place at a
            // breakpoint: it replaces the first everywhere, which stays named as replaced.
            if let earlier = live[0].attempts.last(where: { $0.number == event.attempt })?.status {
                live[0].replaced = ReplacedAnswer(attempt: event.attempt, status: earlier)
                if live[0].responseBody?.attempt == event.attempt { live[0].responseBody = nil }
            }
            live[0].httpVersion = version
            self.status = status
            grpcStatus = headers.first { $0.key.lowercased() == "grpc-status" }.flatMap { Int($0.value) }
            live[0].responseHeaders = headers
            live[0].responseFields = nil
            live[0].expectedBytes = expected
            bytes = 0
            updateAttempt(number: event.attempt) {
                $0.status = status
                $0.responseAt = t
            }
        case .data(let count):
            bytes += count
        case .uploaded(let sent, let total):
            live[0].uploadedBytes = sent
            live[0].uploadTotal = total
        case .responseBody(let body, let total, let truncated, let mediaType):
            live[0].responseBody = ResponseBody(attempt: event.attempt, body: body, totalBytes: total, truncated: truncated, mediaType: mediaType)
        case .requestBody(let body, _, _, _):
            // A streamed upload as it went: `queued` could only say "a stream".
            live[0].requestBody = body
        case .headerFields(.request, let fields):
            live[0].requestFields = fields
        case .headerFields(.response, let fields):
            live[0].responseFields = fields
        case .trailers(.request, let fields):
            live[0].requestTrailers = fields
        case .trailers(.response, let fields):
            live[0].responseTrailers = fields
            if let status = fields.first(where: { $0.name.rawName.lowercased() == "grpc-status" }).flatMap({ Int($0.value) }) { grpcStatus = status }
        case .messages(let fromClient, let toClient):
            live[0].messages = MessageCounts(fromClient: fromClient, toClient: toClient)
        case .taskCompleted(let error):
            if let error {
                // A copy cancelled because another answered first is not the row's error.
                if !error.isHedgeCancellation { live[0].lastError = "\(error.code) \(error.message)" }
                if error.isHedgeCancellation, let copy = segments.lastIndex(where: { $0.kind == .attempt(event.attempt) && $0.end == nil }) {
                    segments[copy].end = t
                }
                updateAttempt(number: event.attempt) { $0.error = "\(error.code) \(error.message)" }
            }
            updateAttempt(number: event.attempt) { $0.end = t }
        case .validationFailed(let reason):
            updateAttempt(number: event.attempt) { $0.error = $0.error ?? reason }
        case .retryDenied(let reason):
            live[0].reason = reason
            deniedRetry = true
            updateAttempt(number: event.attempt) { $0.decision = reason }
        case .retryScheduled(let delay, let reason):
            closeSegment(at: t)
            state = .backoff
            live[0].retryAt = t + delay
            live[0].reason = reason
            segments.append(Segment(kind: .wait, start: t))
            // The deciding attempt (with hedges, the one that answered first), else the last.
            updateAttempt(number: live[0].attempts.contains { $0.number == event.attempt } ? event.attempt : nil) {
                $0.end = $0.end ?? t
                $0.delay = delay
                $0.decision = reason
            }
        case .earlyRetry(let trigger, let delay):
            live[0].retryAt = t + delay
            updateAttempt(number: event.attempt - 1) { $0.decision = ($0.decision ?? "") + "; early retry (\(trigger))" }
        case .intercepted(let by, let command):
            if event.attempt != live[0].interceptedAttempt {
                live[0].interceptedBy = []
                live[0].interceptedAttempt = event.attempt
            }
            live[0].interceptedBy.append(command == "execute" ? by : "\(by) (\(command))")
        case .held(let batch):
            closeSegment(at: t)
            state = .held
            live[0].heldBy = .batch(batch)
            segments.append(Segment(kind: .wait, start: t))
        case .released:
            closeSegment(at: t)
            state = .queued
            live[0].heldBy = nil
        case .circuitWaiting(let host):
            closeSegment(at: t)
            state = .held
            live[0].heldBy = .circuit
            segments.append(Segment(kind: .wait, start: t))
            updateAttempt(number: event.attempt - 1) { $0.decision = ($0.decision ?? "") + "; held: circuit breaker of \(host) open" }
        case .rateLimitWaiting(let host, let until):
            closeSegment(at: t)
            state = .held
            live[0].heldBy = .rateLimit
            live[0].holdUntil = until
            segments.append(Segment(kind: .wait, start: t))
            updateAttempt(number: event.attempt - 1) {
                $0.decision = ($0.decision ?? "") + String(format: "; held %.1fs: %@ asked every client to slow down", max(0, until - t), host)
            }
        case .circuitOpened, .circuitHalfOpen, .circuitClosed, .rateLimited, .retryBudget, .breakpointSet, .breakpointRemoved:
            break
        case .reactorStarted(let name, _), .reactorWaiting(let name):
            closeSegment(at: t)
            state = .held
            live[0].heldBy = .reactor(name)
            segments.append(Segment(kind: .wait, start: t))
        case .reactorFinished(_, let outcome):
            closeSegment(at: t)
            state = .queued
            live[0].heldBy = nil
            if case .failure(let why) = outcome { live[0].lastError = why }
        case .requeued(_, let reason):
            live[0].reason = reason
            updateAttempt { $0.decision = "requeued: \(reason)" }
        case .cancelled(let by):
            live[0].cancelledBy = by
        case .finished(let outcome, let status, _, let duration, let reason):
            closeSegment(at: t)
            state = State(outcome)
            if let status { self.status = status }
            finalDuration = duration
            live[0].reason = reason
            finishTime = t
            live[0].retryAt = nil
            live[0].heldBy = nil
            // The deciding attempt (with hedges, the one that answered first), else the last.
            updateAttempt(number: live[0].attempts.contains { $0.number == event.attempt } ? event.attempt : nil) {
                $0.end = $0.end ?? t
                if outcome != .success, outcome != .relayed, $0.decision == nil { $0.decision = reason }
            }
            // A finished row is kept for hours: one `data` event per run, no spare capacity.
            let (kept, removed) = live[0].events.mergingDataRuns()
            live[0].events = kept
            dataEventsMerged += Int32(clamping: removed)
        case .other, .missed:
            break
        }
    }

    /// Keeps the event for the detail view. A `data` event right after another of the same
    /// attempt is merged into it as it comes: a download is thousands of them (16,000 a
    /// 4 GiB file), which filled the Events tab and the row's memory while it ran.
    private mutating func keep(_ event: RequestEvent) {
        if live[0].events.appendMergingData(event) {
            dataEventsMerged = dataEventsMerged == .max ? .max : dataEventsMerged + 1
        }
    }

    private mutating func setURL(_ url: String) {
        self.url = url
        let parsed = URLComponents(string: url)
        host = Self.exact(parsed?.host.map { host in parsed?.port.map { "\(host):\($0)" } ?? host } ?? "")
        var path = (parsed?.percentEncodedPath ?? "") + (parsed?.percentEncodedQuery.map { "?" + $0 } ?? "")
        // No path is `/`; no URL at all (a request the proxy could not read) shows none.
        if path.isEmpty, !url.isEmpty { path = "/" }
        // Usually the URL ends with it: then only where it starts is kept.
        let (urlBytes, pathBytes) = (url.utf8.count, path.utf8.count)
        if urlBytes >= pathBytes, urlBytes - pathBytes <= Int(Int32.max),
           url.utf8.suffix(pathBytes).elementsEqual(path.utf8) {
            pathStart = Int32(urlBytes - pathBytes)
            ownPath = nil
        } else {
            ownPath = Self.exact(path)
        }
        searchTextVersion &+= 1
    }

    /// The text without the spare room a string built by `+` keeps (twice its length): a row
    /// keeps its host and path for hours.
    private static func exact(_ text: String) -> String {
        let count = text.utf8.count
        guard count > 15 else { return text }  // short strings live inside the String itself
        return String(unsafeUninitializedCapacity: count) { buffer in
            _ = buffer.initialize(from: text.utf8)
            return count
        }
    }

    /// Ends what is open: the last segment, and with hedges the copies racing alongside it.
    private mutating func closeSegment(at t: TimeInterval) {
        for index in segments.indices.reversed() {
            guard segments[index].end == nil else { break }
            segments[index].end = t
        }
    }

    private mutating func updateAttempt(number: Int? = nil, _ change: (inout Attempt) -> Void) {
        let found: Int? = if let number { live[0].attempts.lastIndex { $0.number == number } } else { live[0].attempts.indices.last }
        guard let found else { return }
        change(&live[0].attempts[found])
    }

}

extension OperationRow.State {
    /// The state a row ends in for an operation's `outcome`.
    init(_ outcome: RequestOutcome) {
        self = switch outcome {
        case .success: .succeeded
        case .failure: .failed
        case .cancelled: .cancelled
        case .relayed: .relayed
        }
    }
}
