import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations

/// The built-in demo: a timeline of requests and actions against fault servers started in
/// this process, chosen so that a new user sees every feature within seconds.
///
/// Four servers stand for four hosts: `api` (healthy), `backend` (flaky), `legacy` (always
/// failing) and `down` (not listening at first; it comes back a few seconds in, and a
/// probe notices).
struct DemoScenario {
    /// One thing the demo does at a moment of its timeline.
    enum Action {
        case send(DemoRequest)
        case cancel(id: String)
        case takeDownHostDown
        case bringDownHostBack
    }

    struct Step {
        var at: TimeInterval
        var action: Action
    }

    struct DemoRequest {
        var id: String
        var method = "GET"
        var host: DemoHost
        var path: String
        var headers: [String: String] = [:]
        var retry = DemoScenario.retry
        var attemptTimeout: TimeInterval?
    }

    enum DemoHost: CaseIterable {
        case api, backend, legacy, down
    }

    var name: String
    var summary: String
    var steps: [Step]

    /// The demo's default retry policy: visible backoffs, a few attempts.
    static let retry = ExponentialBackoffRetryPolicy(maxAttempts: 4, baseDelay: 1, multiplier: 2, maxDelay: 8, jitter: .equal)

    static let names = ["default", "quick"]

    static func named(_ name: String, wave: Int) -> DemoScenario? {
        switch name {
        case "default": standard(wave: wave)
        case "quick": quick(wave: wave)
        default: nil
        }
    }

    /// About 20 seconds: retries with countdowns, Retry-After, early retry on another
    /// request's success and on a probe, a slow download, redirects, dropped and reset
    /// connections, non-idempotent POSTs, a cancellation and exhausted retries.
    static func standard(wave: Int) -> DemoScenario {
        let w = "w\(wave)"
        func send(_ at: TimeInterval, _ request: DemoRequest) -> Step { Step(at: at, action: .send(request)) }
        var steps: [Step] = [
            Step(at: 0, action: .takeDownHostDown),
            send(0, DemoRequest(id: "\(w)-profile", host: .api, path: "/echo")),
            send(0, DemoRequest(id: "\(w)-redirects", host: .api, path: "/redirect/3")),
            send(0, DemoRequest(id: "\(w)-download", host: .api, path: "/drip?bytes=1000000&duration=20000&chunks=100")),
            send(0, DemoRequest(id: "\(w)-flaky", host: .backend, path: "/flaky/\(w)-a?failures=2&status=503")),
            send(0, DemoRequest(id: "\(w)-rate-limited", host: .backend, path: "/flaky/\(w)-b?failures=1&status=429&retry-after=3")),
            send(0, DemoRequest(id: "\(w)-not-found", host: .api, path: "/status/404")),
            send(0, DemoRequest(id: "\(w)-hanging", host: .api, path: "/hang")),
            send(0, DemoRequest(id: "\(w)-reconnect", host: .down, path: "/echo",
                                retry: ExponentialBackoffRetryPolicy(maxAttempts: 8, baseDelay: 2, multiplier: 2, maxDelay: 8, jitter: .equal),
                                attemptTimeout: 2)),
            send(1, DemoRequest(id: "\(w)-exhausted", host: .legacy, path: "/status/500",
                                retry: ExponentialBackoffRetryPolicy(maxAttempts: 4, baseDelay: 1.5, multiplier: 2, maxDelay: 8, jitter: .equal))),
            send(2, DemoRequest(id: "\(w)-post", method: "POST", host: .backend, path: "/flaky/\(w)-c?failures=1")),
            send(2, DemoRequest(id: "\(w)-post-idempotent", method: "POST", host: .backend, path: "/flaky/\(w)-d?failures=1",
                                headers: ["Idempotency-Key": "\(w)-d-\(UUID().uuidString.prefix(8))"])),
            send(3, DemoRequest(id: "\(w)-dropped", host: .backend, path: "/flaky/\(w)-e?failures=1&status=drop")),
            send(3, DemoRequest(id: "\(w)-reset", host: .backend, path: "/flaky/\(w)-f?failures=2&status=reset")),
            Step(at: 5, action: .cancel(id: "\(w)-hanging")),
            // Attempt 3 of `reconnect` starts by 6 s and the next not before 10 s, so it is
            // the probe, not the backoff, that notices the host is back.
            Step(at: 7.5, action: .bringDownHostBack),
            send(12, DemoRequest(id: "\(w)-slow", host: .api, path: "/delay/3000")),
        ]
        for index in 1...8 {
            steps.append(send(8 + Double(index) * 0.2, DemoRequest(id: "\(w)-item-\(index)", host: .api, path: "/bytes/4096?seed=\(index)")))
        }
        return DemoScenario(name: "default", summary: "the full tour, about 20 seconds", steps: steps)
    }

    /// About 3 seconds: a retry, Retry-After, a 404, a cancellation, exhausted retries.
    static func quick(wave: Int) -> DemoScenario {
        let w = "w\(wave)"
        let fast = ExponentialBackoffRetryPolicy(maxAttempts: 3, baseDelay: 0.2, multiplier: 2, maxDelay: 1, jitter: .equal)
        return DemoScenario(name: "quick", summary: "a short run, about 3 seconds", steps: [
            Step(at: 0, action: .send(DemoRequest(id: "\(w)-profile", host: .api, path: "/echo", retry: fast))),
            Step(at: 0, action: .send(DemoRequest(id: "\(w)-flaky", host: .backend, path: "/flaky/\(w)-a?failures=2&status=503", retry: fast))),
            Step(at: 0, action: .send(DemoRequest(id: "\(w)-rate-limited", host: .backend,
                                                  path: "/flaky/\(w)-b?failures=1&status=429&retry-after=1", retry: fast))),
            Step(at: 0, action: .send(DemoRequest(id: "\(w)-not-found", host: .api, path: "/status/404", retry: fast))),
            Step(at: 0, action: .send(DemoRequest(id: "\(w)-hanging", host: .api, path: "/hang", retry: fast))),
            Step(at: 0, action: .send(DemoRequest(id: "\(w)-exhausted", host: .legacy, path: "/status/503", retry: fast))),
            Step(at: 1, action: .cancel(id: "\(w)-hanging")),
        ])
    }
}
