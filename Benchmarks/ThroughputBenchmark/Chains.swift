import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations
import Synchronization

/// `inFlight` chains of requests, `requests` in all: `send` starts one request and calls
/// its argument when the request ended, which starts the next. Requests per second. The
/// one driver of every "N at a time with callbacks" measurement here, so each is timed alike.
enum Chains {
    static func run(requests: Int, inFlight: Int, _ send: @escaping @Sendable (_ done: @escaping @Sendable () -> Void) -> Void) -> Double {
        let tickets = Tickets(requests)
        let group = DispatchGroup()
        @Sendable func next() {
            guard tickets.take() else { return }
            group.enter()
            send {
                next()
                group.leave()
            }
        }
        let start = DispatchTime.now()
        for _ in 0..<inFlight { next() }
        group.wait()
        return Double(requests) / (Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
    }

    /// The usual measurement: GETs of `url` (64 bytes, never retried) on `queue`.
    static func gets(on queue: RequestQueue, requests: Int, inFlight: Int, url: URL) -> Double {
        run(requests: requests, inFlight: inFlight) { done in
            queue.add(URLRequest(url: url), options: RequestOptions(retryPolicy: .never)) { result in
                precondition(result.outcome == .success && result.data.count == 64, "request failed: \(String(describing: result.error))")
                done()
            }
        }
    }
}

/// Hands out `total` turns to whichever Task asks first.
final class Tickets: Sendable {
    private let left: Mutex<Int>

    init(_ total: Int) { left = Mutex(total) }

    func take() -> Bool {
        left.withLock { left in
            guard left > 0 else { return false }
            left -= 1
            return true
        }
    }
}
