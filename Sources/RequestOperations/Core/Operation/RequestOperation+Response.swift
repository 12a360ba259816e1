import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response of the attempt's task, taken in three steps so that nothing with an effect
/// runs under the operation's lock (#43): under the lock, a hedge that answered first
/// becomes the lead; outside it, the answer is read, its file begun, its cookies stored and
/// the program's validator asked (which may read the operation); under the lock again, the
/// attempt takes it in — if its task is still the attempt's. No other callback of the same
/// task comes in between (a transport reports a task's events one after the other); a
/// cancel may, and then the second step finds the task no longer current and undoes the file.
extension RequestOperation {
    /// What the first step hands out: the answer so far, to take the response into.
    private struct Arrival {
        var answer: Answer
        /// The attempt the response answers (its partial file is named after it).
        let attempt: Int
        /// Where the request went, whose cookies an answer with no URL of its own sets.
        let sentURL: URL?
    }

    /// The response as read outside the lock.
    private struct Reading {
        var answer: Answer
        /// False: what came is no HTTP response (the answer is only emptied).
        var isHTTP = false
        /// Why the answer is refused before a byte of its body is read (no length to read it
        /// by, over the file's limit, no file could be made): the attempt fails with it.
        var refusal: TransportError?
        /// The validator's verdict; nil: acceptable.
        var failure: AttemptFailure?
        /// Where the body goes instead, for a 2xx with a destination.
        var file: ResponseFile?
    }

    /// What the third step leaves to do outside the lock.
    private enum Verdict {
        case none
        /// The task is no longer the attempt's: the file begun for it goes.
        case stale(ResponseFile?)
        /// The answer is refused or invalid: its task is cancelled (the `.cancel` disposition is
        /// ignored on Linux, where the body is read to the end).
        case cancel(TransportTask)
        /// A valid answer whose body goes to the caller's stream: the head goes first.
        case deliverHead(any StreamedAnswerSink, status: Int, headers: [String: String], repeated: [String: [String]], fields: HTTPFields?)
    }

    /// A response of `task`: `take` files it in the answer (false: it is no HTTP response).
    func received(_ task: Int, expectedBytes: Int?, take: (inout Answer) -> Bool) -> URLSession.ResponseDisposition {
        let (arrival, hedges) = transition(ResponseArrived(task: task, at: environment.now()))
        if let hedges { tearDown(hedges) }
        guard let arrival else { return .allow }
        let reading = read(arrival, expectedBytes: expectedBytes, take: take)
        let verdict = transition(AnswerRead(reading: reading, task: task, expectedBytes: expectedBytes))
        switch verdict {
        case .none: break
        case .stale(let file): file?.discard()
        case .cancel(let task): cancelTasks([task])
        case .deliverHead(let stream, let status, let headers, let repeated, let fields):
            stream.deliverHead(status: status, headers: headers, repeated: repeated, fields: fields)
        }
        return .allow
    }

    /// The first step: the first response wins — a hedge that answers first leads from now
    /// on, and the copies still racing are cancelled (the teardown). The 3xx of a refused
    /// redirect is no answer: the attempt fails as refused.
    private struct ResponseArrived: OperationTransition {
        let task: Int
        let at: TimeInterval

        func apply(to state: inout State, of operation: RequestOperation) -> (Arrival?, Teardown?) {
            guard !state.machine.refusedRedirect(lead: task) else { return (nil, nil) }
            var teardown = operation.settleHedges(&state, answeredBy: task, at: at)
            guard state.machine.isLead(task) else { return (nil, teardown) }
            // Every response starts a new body: on Linux an authentication challenge delivers
            // the 401 response before the real one, and a file begun for it goes.
            let earlier = state.machine.answerArriving(lead: task)
            if !earlier.isEmpty {
                var both = teardown ?? Teardown()
                both.merge(earlier)
                teardown = both
            }
            return (Arrival(answer: state.answer, attempt: state.record.number, sentURL: state.sent?.url), teardown)
        }
    }

    /// The third step: the answer as read, taken in (``takeIn(_:_:task:expectedBytes:)``).
    private struct AnswerRead: OperationTransition {
        let reading: Reading
        let task: Int
        let expectedBytes: Int?

        func apply(to state: inout State, of operation: RequestOperation) -> Verdict {
            operation.takeIn(&state, reading, task: task, expectedBytes: expectedBytes)
        }
    }

    /// The second step, outside the lock: the response read into the answer, judged, its file
    /// begun and its cookies stored.
    private func read(_ arrival: Arrival, expectedBytes: Int?, take: (inout Answer) -> Bool) -> Reading {
        assertOutsideTransition()
        // Every response starts a new body: on Linux an authentication challenge
        // delivers the 401 response before the real one.
        var answer = arrival.answer
        answer.body = Data()
        answer.keptOfStream = Data()
        var reading = Reading(answer: answer)
        guard take(&reading.answer), let status = reading.answer.status else { return reading }
        reading.isHTTP = true
        let headers = reading.answer.headers
        if let problem = ResponseFraming.lengthProblem(headers) {
            // No length to read the body by: FoundationNetworking read on and called it a success.
            reading.refusal = TransportError(code: URLError.Code.badServerResponse.rawValue, message: problem)
            return reading
        }
        if let destination = options.destination, (200..<300).contains(status) {
            if let limit = options.maxFileBytes, let expectedBytes, expectedBytes > limit {
                // Said before a byte is written: no file is begun for it.
                reading.refusal = TransportError(
                    code: URLError.Code.dataLengthExceedsMaximum.rawValue,
                    message: "the answer's \(expectedBytes) bytes are over the \(limit)-byte limit for its file (RequestOptions.maxFileBytes)")
                return reading
            }
            do {
                reading.file = try ResponseFile(destination: destination, attempt: arrival.attempt)
            } catch let error as ResponseFileError {
                reading.refusal = TransportError(code: URLError.Code.cannotCreateFile.rawValue, message: error.message)
                return reading
            } catch {}
        }
        if let jar = environment.cookies, let url = reading.answer.url ?? arrival.sentURL {
            jar.store(responseHeaders: headers, for: url)
        }
        // Relayed as it came: no status makes the answer invalid (it streams like a 2xx).
        reading.failure = options.relaysEveryAnswer ? nil
            : options.validator.validate(status: status, headers: headers, response: { reading.answer.httpURLResponse() })
        return reading
    }

    /// The third step, under the lock: the attempt takes in the answer as read.
    private func takeIn(_ state: inout State, _ reading: Reading, task: Int, expectedBytes: Int?) -> Verdict {
        guard let lead = state.machine.answerTaken(lead: task, file: reading.file) else { return .stale(reading.file) }
        state.answer = reading.answer
        guard reading.isHTTP, let status = state.answer.status else { return .none }
        if let refusal = reading.refusal {
            state.machine.stop(lead: task, .local(refusal))
            return .cancel(lead)
        }
        let now = environment.now()
        let encodedLength = Self.encodedLength(headers: state.answer.headers, expectedBytes: expectedBytes)
        state.machine.answerBegins(lead: task, at: now, tracksProgress: options.readTimeout != nil, encodedLength: encodedLength)
        state.record.responseAt = now
        state.record.status = status
        state.record.bytes = 0
        publish(&state, .response(status: status, headers: state.answer.headers, expectedBytes: expectedBytes, httpVersion: state.answer.httpVersion))
        if options.relaysFieldsAsWritten, let fields = state.answer.fieldsAsReceived {
            // Relayed so by a proxy: the events show the answer as it was said.
            publish(&state, .headerFields(side: .response, fields: fields))
        }
        guard let failure = reading.failure else {
            guard let stream = options.bodyStream, reading.file == nil else { return .none }
            state.machine.streamingBegins(lead: task)
            return .deliverHead(stream, status: status, headers: state.answer.headers, repeated: state.answer.repeatedHeaders,
                                fields: state.answer.fieldsAsReceived)
        }
        let stops = options.cancelOnInvalidResponse
        state.machine.answerInvalid(lead: task, failure, stops: stops)
        publish(&state, .validationFailed(reason: failure.summary))
        return stops ? .cancel(lead) : .none
    }
}
