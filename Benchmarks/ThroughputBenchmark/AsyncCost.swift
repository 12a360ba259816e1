import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations
import Synchronization

/// The cost of the async layer: the same operations, `inFlight` chains at a time, started
/// either from completion handlers (each completion adds the next) or from `inFlight`
/// Tasks that each loop on `try await queue.response(for:)`. Requests per second.
enum AsyncCost {
    static func completionHandlers(requests: Int, inFlight: Int, url: URL) -> Double {
        let queue = RequestQueue(maxConcurrentRequests: inFlight)
        return Chains.run(requests: requests, inFlight: inFlight) { done in
            queue.add(URLRequest(url: url), options: RequestOptions(retryPolicy: .never)) { result in
                precondition(result.outcome == .success && result.data.count == 64, "request failed: \(String(describing: result.error))")
                done()
            }
        }
    }

    static func asyncTasks(requests: Int, inFlight: Int, url: URL) -> Double {
        let queue = RequestQueue(maxConcurrentRequests: inFlight)
        let tickets = Tickets(requests)
        let done = DispatchSemaphore(value: 0)
        let start = DispatchTime.now()
        Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<inFlight {
                    group.addTask {
                        while tickets.take() {
                            let result = try? await queue.response(for: URLRequest(url: url), options: RequestOptions(retryPolicy: .never))
                            precondition(result?.data.count == 64, "request failed")
                        }
                    }
                }
            }
            done.signal()
        }
        done.wait()
        return Double(requests) / (Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
    }
}
