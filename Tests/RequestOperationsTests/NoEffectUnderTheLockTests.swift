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
            let request: URLRequest
            let handler: TransportCallbacks
        }

        func makeTask(for request: URLRequest, handler: TransportCallbacks) -> TransportTask {
            let id = next.withLock { $0 += 1; return $0 }
            return TransportTask(identifier: id, handle: Call(request: request, handler: handler))
        }

        private func complete(_ task: TransportTask, status: Int?) {
            guard let call = task.handle as? Call, finished.withLock({ $0.insert(task.identifier).inserted }) else { return }
            if let status {
                _ = call.handler.task(task.identifier, didReceive: TransportResponse(url: call.request.url!, statusCode: status, httpVersion: "HTTP/1.1",
                                                                                     fields: [("Content-Length", "2")]))
                call.handler.task(task.identifier, didReceive: Data("ok".utf8))
                call.handler.task(task.identifier, didCompleteWithError: nil)
            } else {
                call.handler.task(task.identifier, didCompleteWithError: URLError(.cancelled))
            }
        }

        func resume(_ task: TransportTask) {
            guard let call = task.handle as? Call, let url = call.request.url else { return }
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
}
