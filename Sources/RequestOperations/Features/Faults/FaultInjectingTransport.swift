import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// The transport a queue hands its attempts to: its own transport, with ``FaultRules``
/// applied at the seam. With no rule every call goes straight through.
///
/// An injected answer or failure is a task of its own (a negative identifier), whose
/// callbacks come on `queue`, never from `resume`: the engine cannot tell it from the
/// network, except that it is told first (``TransportCallbacks/task(_:wasInjected:)``) so its
/// events say so. A delay and a cut body ride on a real task.
final class FaultInjectingTransport: RequestTransport {
    let base: RequestTransport
    let rules: FaultRules
    private let clock: RequestClock
    private let queue = DispatchQueue(label: "reqtop.faults")
    private let nextIdentifier = Atomic<Int>(0)

    /// Tasks this transport answers itself or holds back, by identifier.
    private enum Held {
        case answer(FaultRule, RequestMessage, TransportCallbacks)
        case delayed(FaultRule, seconds: TimeInterval, TransportCallbacks)
        case cut(FaultRule, TransportCallbacks)
    }
    private let held = Mutex<[Int: Held]>([:])
    private let holding = Atomic<Int>(0)

    init(base: RequestTransport, rules: FaultRules, clock: RequestClock) {
        self.base = base
        self.rules = rules
        self.clock = clock
    }

    var name: String { base.name }
    var startsNextRequestInCallbacks: Bool { base.startsNextRequestInCallbacks }
    var operationStarter: OperationStarter? { base.operationStarter }
    var verifiesCertificates: Bool { base.verifiesCertificates }
    var usesRequestTimeoutInterval: Bool { base.usesRequestTimeoutInterval }
    var resendsBodyOnRedirect: Bool { base.resendsBodyOnRedirect }
    var sendsLengthWithStreams: Bool { base.sendsLengthWithStreams }
    func resumeReading(_ task: TransportTask) { base.resumeReading(task) }
    func afterReads(_ task: TransportTask, _ work: @escaping @Sendable () -> Void) { base.afterReads(task, work) }

    func makeTask(for request: RequestMessage, handler: TransportCallbacks) -> TransportTask {
        guard let rule = rules.pick(for: request) else { return base.makeTask(for: request, handler: handler) }
        return makeTask(for: request, handler: handler, injecting: rule)
    }

    /// A task with `rule` applied whatever the rules say: a breakpoint's answer or failure.
    func makeTask(for request: RequestMessage, handler: TransportCallbacks, injecting rule: FaultRule) -> TransportTask {
        switch rule.effect {
        case .status, .reset, .stall, .respond, .fail:
            let identifier = -1 - nextIdentifier.wrappingAdd(1, ordering: .relaxed).oldValue
            hold(identifier, .answer(rule, request, handler))
            return TransportTask(identifier: identifier, handle: identifier)
        case .delay(let range):
            let task = base.makeTask(for: request, handler: handler)
            hold(task.identifier, .delayed(rule, seconds: rules.draw(range), handler))
            return task
        case .truncate(let bytes):
            let cutter = TruncatingCallbacks(handler: handler, limit: bytes, transport: base)
            let task = base.makeTask(for: request, handler: cutter)
            cutter.task = task
            hold(task.identifier, .cut(rule, handler))
            return task
        }
    }

    private func hold(_ identifier: Int, _ what: Held) {
        held.withLock { $0[identifier] = what }
        holding.wrappingAdd(1, ordering: .relaxed)
    }

    private func take(_ identifier: Int) -> Held? {
        guard holding.load(ordering: .relaxed) > 0 else { return nil }
        let taken = held.withLock { $0.removeValue(forKey: identifier) }
        if taken != nil { holding.wrappingSubtract(1, ordering: .relaxed) }
        return taken
    }

    func resume(_ task: TransportTask) {
        guard let what = take(task.identifier) else { return base.resume(task) }
        switch what {
        case .answer(let rule, let request, let handler):
            queue.async { [self] in
                handler.task(task.identifier, wasInjected: rule)
                answer(task, rule: rule, request: request, handler: handler)
            }
        case .delayed(let rule, let seconds, let handler):
            queue.async { handler.task(task.identifier, wasInjected: rule) }
            let base = self.base
            _ = clock.schedule(at: clock.now() + seconds) { base.resume(task) }
        case .cut(let rule, let handler):
            queue.async { handler.task(task.identifier, wasInjected: rule) }
            base.resume(task)
        }
    }

    /// The answer a status, a reset or a stall gives.
    private func answer(_ task: TransportTask, rule: FaultRule, request: RequestMessage, handler: TransportCallbacks) {
        switch rule.effect {
        case .status(let status, let retryAfter):
            var fields = [("Content-Type", "text/plain; charset=utf-8")]
            if let retryAfter { fields.append(("Retry-After", "\(Int(retryAfter.rounded(.up)))")) }
            respond(task, to: request, status: status, fields: fields, body: Data("\(status) injected by reqtop (rule: \(rule.match))\n".utf8),
                    handler: handler)
        case .respond(let status, let headers, let body):
            respond(task, to: request, status: status, fields: headers.map { ($0.key, $0.value) }, body: body, handler: handler)
        case .fail(let code):
            handler.task(task.identifier, didCompleteWithError: URLError(
                code, userInfo: [NSLocalizedDescriptionKey: "\(TransportError.describe(code)) (injected by reqtop: \(rule.setBy))"]))
        case .reset:
            handler.task(task.identifier, didCompleteWithError: URLError(
                .networkConnectionLost, userInfo: [NSLocalizedDescriptionKey: "connection reset (injected by reqtop, rule: \(rule.match))"]))
        case .stall:
            // Nothing until the attempt gives up: its cancel completes the task.
            held.withLock { $0[task.identifier] = .answer(rule, request, handler) }
            holding.wrappingAdd(1, ordering: .relaxed)
        case .delay, .truncate:
            break
        }
    }

    /// An answer made here: its head (with its length, where not given, and the mark that it
    /// is reqtop's), its body, its end.
    private func respond(_ task: TransportTask, to request: RequestMessage, status: Int, fields: [(String, String)], body: Data,
                         handler: TransportCallbacks) {
        var fields = fields
        if !fields.contains(where: { $0.0.lowercased() == "content-length" }) { fields.append(("Content-Length", "\(body.count)")) }
        fields.append(("X-Reqtop-Injected", "true"))
        let response = TransportResponse(url: request.url, statusCode: status,
                                         httpVersion: "HTTP/1.1", fields: fields)
        guard handler.task(task.identifier, didReceive: response) == .allow else {
            return handler.task(task.identifier, didCompleteWithError: URLError(.cancelled))
        }
        if !body.isEmpty { handler.task(task.identifier, didReceive: body) }
        handler.task(task.identifier, didCompleteWithError: nil)
    }

    func cancel(_ task: TransportTask) {
        if task.identifier < 0 {
            let stalled = take(task.identifier)
            if case .answer(_, _, let handler)? = stalled {
                queue.async { handler.task(task.identifier, didCompleteWithError: URLError(.cancelled)) }
            }
            return
        }
        _ = take(task.identifier)
        base.cancel(task)
    }

    func discard(_ task: TransportTask) {
        if task.identifier < 0 {
            _ = take(task.identifier)
            return
        }
        _ = take(task.identifier)
        base.discard(task)
    }
}

/// Passes a real task's callbacks on, and cuts its body after `limit` bytes: the connection
/// then reads as lost (-1005), as when a server closes mid-body.
final class TruncatingCallbacks: TransportCallbacks, Sendable {
    private let handler: TransportCallbacks
    private let limit: Int
    private let transport: RequestTransport
    private let state = Mutex<(task: TransportTask?, passed: Int, cut: Bool)>((nil, 0, false))

    init(handler: TransportCallbacks, limit: Int, transport: RequestTransport) {
        self.handler = handler
        self.limit = max(0, limit)
        self.transport = transport
    }

    var task: TransportTask? {
        get { state.withLock { $0.task } }
        set { state.withLock { $0.task = newValue } }
    }

    func task(_ task: Int, willRedirect response: HTTPURLResponse, to request: RequestMessage) -> RequestMessage? {
        handler.task(task, willRedirect: response, to: request)
    }

    func task(_ task: Int, didReceive response: URLResponse) -> URLSession.ResponseDisposition {
        handler.task(task, didReceive: response)
    }

    func task(_ task: Int, didReceive response: TransportResponse) -> URLSession.ResponseDisposition {
        handler.task(task, didReceive: response)
    }

    func task(_ task: Int, didReceive data: Data) {
        _ = pass(task, data, paced: false)
    }

    /// Paced parts stay paced (a stream under an injected cut keeps its back-pressure).
    func task(_ task: Int, didReceivePaced data: Data) -> Bool {
        pass(task, data, paced: true)
    }

    /// Passes the part on up to the limit, and cuts the body there; what the engine said
    /// about room (true past a cut: nothing more is wanted).
    private func pass(_ task: Int, _ data: Data, paced: Bool) -> Bool {
        let (pass, cutNow, real) = state.withLock { state -> (Data?, Bool, TransportTask?) in
            guard !state.cut else { return (nil, false, nil) }
            let room = limit - state.passed
            if data.count < room {
                state.passed += data.count
                return (data, false, nil)
            }
            state.cut = true
            state.passed = limit
            return (room > 0 ? Data(data.prefix(room)) : nil, true, state.task)
        }
        var goOn = true
        if let pass {
            if paced { goOn = handler.task(task, didReceivePaced: pass) } else { handler.task(task, didReceive: pass) }
        }
        if cutNow {
            handler.task(task, didCompleteWithError: URLError(.networkConnectionLost, userInfo: [
                NSLocalizedDescriptionKey: "connection lost after \(limit) bytes of the body (injected by reqtop)"]))
            if let real { transport.cancel(real) }
            return true
        }
        return goOn
    }

    func task(_ task: Int, didReceive challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        handler.task(task, didReceive: challenge)
    }

    func task(_ task: Int, didCompleteWithError error: Error?) {
        // After a cut the engine has its completion already; the real one is dropped.
        guard !state.withLock({ $0.cut }) else { return }
        handler.task(task, didCompleteWithError: error)
    }

    func taskDidSendRequest(_ task: Int) {
        handler.taskDidSendRequest(task)
    }

    func task(_ task: Int, didSendBodyBytes sent: Int) {
        handler.task(task, didSendBodyBytes: sent)
    }

    func task(_ task: Int, didUseConnection connection: Int, reused: Bool, via proxy: String?) {
        handler.task(task, didUseConnection: connection, reused: reused, via: proxy)
    }

    var wantsFieldsAsWritten: Bool { handler.wantsFieldsAsWritten }
    var wantsTrailers: Bool { handler.wantsTrailers }

    func task(_ task: Int, didReceiveTrailers trailers: HTTPFields) {
        guard !state.withLock({ $0.cut }) else { return }
        handler.task(task, didReceiveTrailers: trailers)
    }
}
