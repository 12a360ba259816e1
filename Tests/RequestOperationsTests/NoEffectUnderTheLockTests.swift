import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Synchronization
import Testing

/// The operation's lock is never held while the transport runs (#43): a transport that calls
/// back from inside `resume` and `cancel`, an interceptor and a reactor that each read the
/// operation (taking its lock), 10,000 operations with retries, hedges, breakpoints and
/// cancels — no deadlock, and every completion exactly once.
@Suite("No effect under the operation's lock")
struct NoEffectUnderTheLockTests {
    /// Answers from inside `resume` (on the caller's thread): `/flaky?n=K` answers 503 to its
    /// first attempt, `/slow` answers later from another thread (so hedges race it), the rest
    /// 200 at once. `cancel` reports the cancellation from inside itself too.
    final class SynchronousTransport: RequestTransport {
        let name = "synchronous"
        private let next = Mutex(0)
        private let seen = Mutex<[String: Int]>([:])
        private let finished = Mutex<Set<Int>>([])

        struct Call: Sendable {
            let request: RequestMessage
            let handler: TransportCallbacks
        }

        func makeTask(for request: RequestMessage, handler: TransportCallbacks) -> TransportTask {
            let id = next.withLock { $0 += 1; return $0 }
            return TransportTask(identifier: id, handle: Call(request: request, handler: handler))
        }

        private func complete(_ task: TransportTask, status: Int?) {
            guard let call = task.handle as? Call, finished.withLock({ $0.insert(task.identifier).inserted }) else { return }
            if let status {
                _ = call.handler.task(task.identifier, didReceive: TransportResponse(url: call.request.url, statusCode: status, httpVersion: "HTTP/1.1",
                                                                                     fields: [("Content-Length", "2")]))
                call.handler.task(task.identifier, didReceive: Data("ok".utf8))
                call.handler.task(task.identifier, didCompleteWithError: nil)
            } else {
                call.handler.task(task.identifier, didCompleteWithError: URLError(.cancelled))
            }
        }

        func resume(_ task: TransportTask) {
            guard let call = task.handle as? Call else { return }
            let url = call.request.url
            if url.path == "/redirect" {
                // A 302 to /ok on the same host, asked of the operation's redirect policy first.
                let to = RequestMessage(url: URL(string: "http://\(url.host!)/ok")!)
                let response = HTTPURLResponse(url: url, statusCode: 302, httpVersion: "HTTP/1.1", headerFields: ["Location": "/ok"])!
                guard call.handler.task(task.identifier, willRedirect: response, to: to) != nil else {
                    complete(task, status: nil)
                    return
                }
                complete(task, status: 200)
                return
            }
            if url.path == "/slow" {
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.003) { self.complete(task, status: 200) }
                return
            }
            let hits = seen.withLock { seen -> Int in
                seen[url.absoluteString, default: 0] += 1
                return seen[url.absoluteString]!
            }
            complete(task, status: url.path == "/flaky" && hits == 1 ? 503 : 200)
        }

        func cancel(_ task: TransportTask) { complete(task, status: nil) }
        func discard(_ task: TransportTask) {}
    }

    @Test func tenThousandOperationsWithEverythingAndNoDeadlock() async throws {
        let queue = RequestQueue(maxConcurrentRequests: 8, transport: SynchronousTransport(), earlyRetry: nil, circuitBreaker: nil, rateLimits: false)
        let point = queue.breakpoints.add(Breakpoint(match: try RequestMatch("path:/break"), setBy: "test"))
        let readsTheOperation = ClosureInterceptor(name: "reads") { request, context in
            _ = queue.operation(withID: context.operationID)?.phase
            return Interception(request)
        }
        let reactor = RequestReactor(name: "reads", options: RequestReactor.Options(holdNewRequests: false), decide: { input in
            _ = queue.operation(withID: input.operationID)?.attempt
            return .ignore
        }, run: { _ in })
        let completions = Mutex<[String: Int]>([:])
        let total = 10_000
        var options = RequestOptions(retryPolicy: quickPolicy(maxAttempts: 3, baseDelay: 0.001))
        options.interceptors = [readsTheOperation]
        options.reactors = [reactor]
        var hedged = options
        hedged.hedge = HedgePolicy(after: 0.001, max: 1)
        var stopped: [RequestOperation] = []
        for index in 0..<total {
            let path = ["/flaky", "/ok", "/slow", "/break", "/ok"][index % 5]
            let request = URLRequest(url: URL(string: "http://sync.invalid\(path)?n=\(index)")!)
            let operation = queue.add(request, id: "op-\(index)", options: path == "/slow" ? hedged : options) { _ in
                completions.withLock { $0["op-\(index)", default: 0] += 1 }
            }
            if index % 7 == 0 { operation.cancel() }
            if path == "/break" { stopped.append(operation) }
            // Let the queue drain as it goes: the lot is bounded in memory and time.
            if index % 500 == 499 {
                for operation in stopped where operation.breakpointStage != nil { operation.resolveBreakpoint(.proceed) }
            }
        }
        // Breakpoints hold their operations until resolved: resolve until none is left.
        let deadline = Date().addingTimeInterval(60)
        while completions.withLock({ $0.count }) < total, Date() < deadline {
            for operation in stopped where operation.breakpointStage != nil { operation.resolveBreakpoint(.proceed) }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        queue.breakpoints.remove(point)
        let counts = completions.withLock { $0 }
        #expect(counts.count == total, "every operation completed (no deadlock, none lost): \(counts.count) of \(total)")
        #expect(counts.values.allSatisfy { $0 == 1 }, "each exactly once")
    }

    // MARK: - The program's own code, called by the operation

    /// The operation that a request to `op-N.sync.invalid` belongs to.
    static func operationID(ofHost host: String?) -> String? {
        host.flatMap { $0.split(separator: ".").first.map(String.init) }
    }

    /// A retry policy that reads the operation it decides for (by its `X-Op` header).
    struct ReadingRetryPolicy: RetryPolicy {
        let base: RetryPolicy
        let look: @Sendable (String?) -> Void
        func decide(_ context: RetryContext) -> RetryDecision {
            look(context.headers["X-Op"])
            return base.decide(context)
        }
    }

    /// A validator that reads the operation whose answer it judges (by the answer's host).
    struct ReadingValidator: ResponseValidator {
        let look: @Sendable (String?) -> Void
        func validate(_ response: HTTPURLResponse) -> AttemptFailure? { nil }
        func validate(status: Int, headers: [String: String], response: () -> HTTPURLResponse?) -> AttemptFailure? {
            look(NoEffectUnderTheLockTests.operationID(ofHost: response()?.url?.host))
            return StandardResponseValidator().validate(status: status, headers: headers, response: response)
        }
    }

    /// A retry budget that reads the operation of the host it is asked about.
    final class ReadingBudget: RetryBudget {
        let look: @Sendable (String?) -> Void
        init(look: @escaping @Sendable (String?) -> Void) { self.look = look }
        func requestSent(to host: String) { look(NoEffectUnderTheLockTests.operationID(ofHost: host)) }
        func spendRetry(on host: String) -> String? {
            look(NoEffectUnderTheLockTests.operationID(ofHost: host))
            return nil
        }
        func retriesLeft(on host: String) -> Int? {
            look(NoEffectUnderTheLockTests.operationID(ofHost: host))
            return 10
        }
    }

    /// The retry policy, the validator, the retry budget and the redirect policy are the
    /// program's code: each reads the very operation that called it (taking that operation's
    /// lock). Before #43 the policy, validator, budget and redirect policy ran under the
    /// operation's lock, and the first such read stopped the process ("Recursive call to lock
    /// Mutex"); now every one of 2,000 operations completes, exactly once.
    @Test func theProgramsPoliciesMayReadTheOperationTheyJudge() async throws {
        let queue = RequestQueue(maxConcurrentRequests: 8, transport: SynchronousTransport(), earlyRetry: nil, circuitBreaker: nil, rateLimits: false)
        let looked = Mutex<[String: Int]>([:])
        let look: @Sendable (String?) -> Void = { id in
            guard let id, let operation = queue.operation(withID: id) else { return }
            _ = operation.phase
            _ = operation.attempt
            looked.withLock { $0[id, default: 0] += 1 }
        }
        let environment = RequestEnvironment(transport: SynchronousTransport(), gate: ConcurrencyGate(limit: 8),
                                             retryBudget: ReadingBudget(look: look), cookies: CookieJar())
        var options = RequestOptions(retryPolicy: ReadingRetryPolicy(base: quickPolicy(maxAttempts: 3, baseDelay: 0.001), look: look))
        options.validator = ReadingValidator(look: look)
        options.redirects = RedirectPolicy(decide: { response, next in
            look(NoEffectUnderTheLockTests.operationID(ofHost: response.url?.host))
            return next
        })
        let completions = Mutex<[String: RequestResult]>([:])
        let total = 2_000
        for index in 0..<total {
            let path = ["/flaky", "/redirect", "/ok", "/flaky"][index % 4]
            var request = URLRequest(url: URL(string: "http://op-\(index).sync.invalid\(path)")!)
            request.setValue("op-\(index)", forHTTPHeaderField: "X-Op")
            let operation = RequestOperation(request: request, id: "op-\(index)", options: options, environment: environment, completion: { result in
                completions.withLock { $0["op-\(index)"] = result }
            })
            queue.add(operation)
        }
        let deadline = Date().addingTimeInterval(60)
        while completions.withLock({ $0.count }) < total, Date() < deadline {
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        let results = completions.withLock { $0 }
        #expect(results.count == total, "every operation completed: \(results.count) of \(total)")
        #expect(results.values.allSatisfy { $0.outcome == .success }, "each succeeded (a flaky one on its second attempt)")
        let seen = looked.withLock { $0 }
        // Every operation was read by its own validator; the flaky ones by the policy and the
        // budget too, the redirected ones by the redirect policy.
        #expect(seen.count == total)
        #expect(seen["op-0", default: 0] >= 4, "op-0 (flaky): budget, validator ×2, policy: \(seen["op-0", default: 0])")
        #expect(seen["op-1", default: 0] >= 2, "op-1 (redirected): redirect policy, validator: \(seen["op-1", default: 0])")
    }
}

#if DEBUG
/// The check behind every effect (`assertOutsideTransition`) sees a transition while one runs
/// and none after: without it, an effect moved into a transition would not stop a debug build.
@Suite("The transition funnel knows when it is inside one")
struct TransitionDepthTests {
    final class Depths: Sendable {
        let seen = Mutex<[Int]>([])
    }

    struct Probe: OperationTransition {
        let depths: Depths

        func apply(to state: inout RequestOperation.State, of operation: RequestOperation) {
            depths.seen.withLock { $0.append(TransitionDepth.current) }
        }
    }

    @Test func insideATransitionTheDepthIsOneAndAfterItZero() throws {
        let environment = RequestEnvironment(transport: NoEffectUnderTheLockTests.SynchronousTransport())
        let operation = RequestOperation(request: URLRequest(url: URL(string: "http://depth.invalid/")!), environment: environment)
        let probe = Probe(depths: Depths())
        #expect(TransitionDepth.current == 0)
        operation.transition(probe)
        operation.transition(probe)
        #expect(probe.depths.seen.withLock { $0 } == [1, 1])
        #expect(TransitionDepth.current == 0)
    }
}
#endif
