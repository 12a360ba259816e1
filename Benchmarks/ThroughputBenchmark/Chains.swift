import Dispatch
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
