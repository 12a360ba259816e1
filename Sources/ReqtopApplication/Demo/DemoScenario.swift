import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations

/// The built-in demo: a timeline of requests and actions against fault servers started in
/// this process, chosen so that a new user sees every feature within seconds.
///
/// Five servers stand for five hosts: `api` (healthy), `backend` (flaky), `legacy` (always
/// failing), `down` (not listening at first; it comes back a few seconds in, and a
/// probe notices) and `outage` (goes down at 3 s and comes back at 9 s: its circuit breaker
/// opens, holds the requests to it, probes, and closes).
package struct DemoScenario {
    /// One thing the demo does at a moment of its timeline.
    package enum Action {
        case send(DemoRequest)
        case cancel(id: String)
        /// The host's server stops: its port refuses connections.
        case takeDown(DemoHost)
        /// It starts again on the same port.
        case bringBack(DemoHost)
        /// The api host's bearer token expires: the next authenticated requests get 401s.
        case expireToken
    }

    package struct Step {
        package var at: TimeInterval
        package var action: Action
    }

    package struct DemoRequest {
        package var id: String
        package var method = "GET"
        package var host: DemoHost
        package var path: String
        package var headers: [String: String] = [:]
        package var retry = DemoScenario.retry
        package var attemptTimeout: TimeInterval?
        /// JSON body (POST).
        package var body: String?
        /// Sent with the demo's bearer token (refreshed once for a burst of 401s).
        package var auth = false
        /// Held in this wave's batch of that name until it fills or its time limit passes.
        package var batch: String?
        /// Runs after these (ids of this wave), built from their JSON results by `build`.
        package var dependsOn: [String] = []
        package var build: RequestBuilder?
        /// Hedged reads for this request.
        package var hedge: HedgePolicy?
    }

    /// The demo's batches: size and time limit.
    package static let batches: [String: (size: Int, timeLimit: TimeInterval)] = ["uploads": (3, 5)]

    /// A field of a parent's JSON answer, read as a plan's `{{parent.field}}` is.
    package static func field(_ field: String, of parent: String, in parents: DependencyResults) throws -> String {
        try PlanTemplate(text: "{{\(parent).\(field)}}", parent: parent, path: [field]).value(from: parents.result(of: parent)?.data ?? Data())
    }

    /// Sets `name` to a field of a parent's JSON answer, in the query.
    package static func query(_ name: String, from parent: String, field: String) -> RequestBuilder {
        { request, parents in
            var built = request
            var components = URLComponents(url: request.url!, resolvingAgainstBaseURL: false)!
            components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: name, value: try Self.field(field, of: parent, in: parents))]
            built.url = components.url
            return built
        }
    }

    /// Sets `Authorization: Bearer` from the first parent's `token` field.
    package static let bearerFromLogin: RequestBuilder = { request, parents in
        var built = request
        let token = try field("token", of: parents.parents.first?.id ?? "", in: parents)
        built.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        return built
    }

    package enum DemoHost: CaseIterable {
        case api, backend, legacy, down, outage
    }

    package var name: String
    package var summary: String
    package var steps: [Step]

    /// The demo's default retry policy: visible backoffs, a few attempts.
    package static let retry = ExponentialBackoffRetryPolicy(maxAttempts: 4, baseDelay: 1, multiplier: 2, maxDelay: 8, jitter: .equal)

    package static let names = ["default", "quick"]

    package static func named(_ name: String, wave: Int) -> DemoScenario? {
        switch name {
        case "default": standard(wave: wave)
        case "quick": quick(wave: wave)
        default: nil
        }
    }

    /// The demo's retry budget per host: the default share (20 % of requests in 10 s) with a
    /// floor of 0.5 retries a second instead of 10, so that a burst of eight shows refusals
    /// (the default floor allows 100 retries in 10 s to any host).
    package static let retryBudget = RatioRetryBudget.Options(percent: 0.2, window: 10, minRetriesPerSecond: 0.5)

    /// The demo's circuit breakers: the default thresholds, open for 2 s doubling to 4 s (the
    /// default 5 s doubling to 60 s would keep the outage host's breaker open past the
    /// demo's 20 s).
    package static let circuitBreaker = HostCircuitBreaker.Options(openFor: 2, maxOpenFor: 4)

    /// About 20 seconds: retries with countdowns, Retry-After, early retry on another
    /// request's success and on a probe, a hedged read, a slow download, redirects, cut-off and reset
    /// connections, non-idempotent POSTs, a cancellation, exhausted retries and a burst whose
    /// retries the host's retry budget refuses; and the flow
    /// control: a login → account → orders chain, a batch held then released, a token that
    /// expires under a burst of requests (one refresh for all their 401s), and a dependent
    /// request cancelled because its parent exhausted its retries.
    package static func standard(wave: Int) -> DemoScenario {
        let w = "w\(wave)"
        func send(_ at: TimeInterval, _ request: DemoRequest) -> Step { Step(at: at, action: .send(request)) }
        var steps: [Step] = [
            Step(at: 0, action: .takeDown(.down)),
            send(0, DemoRequest(id: "\(w)-profile", host: .api, path: "/echo")),
            send(0, DemoRequest(id: "\(w)-redirects", host: .api, path: "/redirect/3")),
            send(0, DemoRequest(id: "\(w)-download", host: .api, path: "/drip?bytes=1000000&duration=20000&chunks=100")),
            send(0, DemoRequest(id: "\(w)-flaky", host: .backend, path: "/flaky/\(w)-a?failures=2&status=503")),
            send(0, DemoRequest(id: "\(w)-rate-limited", host: .backend, path: "/flaky/\(w)-b?failures=1&status=429&retry-after=3")),
            send(0, DemoRequest(id: "\(w)-not-found", host: .api, path: "/status/404")),
            send(0, DemoRequest(id: "\(w)-hanging", host: .api, path: "/hang")),
            send(0, DemoRequest(id: "\(w)-reconnect", host: .down, path: "/echo",
                                // No jitter: attempts at 0, 2 and 6 s, the next at 14 s (see below).
                                retry: ExponentialBackoffRetryPolicy(maxAttempts: 8, baseDelay: 2, multiplier: 2, maxDelay: 8, jitter: .none),
                                attemptTimeout: 2)),
            send(1, DemoRequest(id: "\(w)-exhausted", host: .legacy, path: "/status/500",
                                retry: ExponentialBackoffRetryPolicy(maxAttempts: 4, baseDelay: 1.5, multiplier: 2, maxDelay: 8, jitter: .equal))),
            send(2, DemoRequest(id: "\(w)-post", method: "POST", host: .backend, path: "/flaky/\(w)-c?failures=1")),
            send(2, DemoRequest(id: "\(w)-post-idempotent", method: "POST", host: .backend, path: "/flaky/\(w)-d?failures=1",
                                headers: ["Idempotency-Key": "\(w)-d-\(UUID().uuidString.prefix(8))"])),
            // A connection cut off waits 2 s (no jitter); the ping at 3.5 s succeeds on the same
            // host and cuts that wait short (`host-success` early retry). Before the ping it
            // depended on another backend request happening to succeed just after the drop,
            // which the rate-limit pause (everything on the host released at 3 s) made a race.
            // Cut off mid-answer rather than dropped before one: libcurl re-sends a GET whose
            // kept-alive connection closes before any answer without a word (so the demo's
            // failure, and the early retry it shows, came and went with connection reuse).
            send(3, DemoRequest(id: "\(w)-dropped", host: .backend, path: "/flaky/\(w)-e?failures=1&status=cut",
                                retry: ExponentialBackoffRetryPolicy(maxAttempts: 4, baseDelay: 2, multiplier: 2, maxDelay: 8, jitter: .none))),
            send(3.5, DemoRequest(id: "\(w)-backend-ping", host: .backend, path: "/echo")),
            // On the api host: the backend's retries (flaky, rate-limited, POSTs, dropped) fill its
            // budget by 3 s on the NIO transport, and only the burst is meant to meet a budget.
            send(3, DemoRequest(id: "\(w)-reset", host: .api, path: "/flaky/\(w)-f?failures=2&status=reset")),
            Step(at: 5, action: .cancel(id: "\(w)-hanging")),
            // Attempt 3 of `reconnect` fails at 6 s and the next is due at 14 s, so it is the
            // probe (every 0.25 s doubling to 2 s), not the backoff, that notices the host is
            // back. (With jitter the next attempt could land just after 7.5 s: a clean-clone
            // CI run once saw no probe.)
            Step(at: 7.5, action: .bringBack(.down)),
            send(12, DemoRequest(id: "\(w)-slow", host: .api, path: "/delay/3000")),
            // Hedged reads: the first copy would take 5 s; after 0.3 s without a response a
            // second copy goes out, answers at once, wins, and the first is cancelled.
            send(1.5, DemoRequest(id: "\(w)-hedged", host: .api, path: "/flaky/\(w)-h?failures=1&status=slow&ms=5000",
                                  hedge: .hedge(after: 0.3))),

            // A dependent chain: the account needs login's token, the orders the account's id.
            send(0.5, DemoRequest(id: "\(w)-login", method: "POST", host: .api, path: "/auth/token",
                                  body: #"{"username":"ann","password":"secret"}"#)),
            send(0.5, DemoRequest(id: "\(w)-account", host: .api, path: "/auth/resource/account?delay=400",
                                  dependsOn: ["\(w)-login"], build: bearerFromLogin)),
            send(0.5, DemoRequest(id: "\(w)-orders", host: .api, path: "/echo", dependsOn: ["\(w)-account"],
                                  build: query("user", from: "\(w)-account", field: "id"))),
            // Its parent exhausts its retries, so it is cancelled with reason "dependency".
            send(1, DemoRequest(id: "\(w)-legacy-report", host: .api, path: "/echo", dependsOn: ["\(w)-exhausted"])),

            // Two uploads held in a batch of 3; its 5 s limit releases them together.
            send(2, DemoRequest(id: "\(w)-upload-1", method: "POST", host: .api, path: "/echo",
                                headers: ["Idempotency-Key": "\(w)-up-1"], body: #"{"part":1}"#, batch: "uploads")),
            send(3, DemoRequest(id: "\(w)-upload-2", method: "POST", host: .api, path: "/echo",
                                headers: ["Idempotency-Key": "\(w)-up-2"], body: #"{"part":2}"#, batch: "uploads")),

            // Bearer auth: the first request logs in; then the token expires under a burst
            // of six requests, all get 401, one refresh runs (1.5 s), all go out again.
            send(4, DemoRequest(id: "\(w)-me", host: .api, path: "/auth/resource/me", auth: true)),
            Step(at: 9, action: .expireToken),
        ]
        for index in 1...6 {
            steps.append(send(9.2, DemoRequest(id: "\(w)-feed-\(index)", host: .api, path: "/auth/resource/feed-\(index)?delay=300", auth: true)))
        }
        // Made while the refresh runs: waits for it, then goes out once with the new token.
        steps.append(send(10, DemoRequest(id: "\(w)-notifications", host: .api, path: "/auth/resource/notifications", auth: true)))
        for index in 1...8 {
            steps.append(send(8 + Double(index) * 0.2, DemoRequest(id: "\(w)-item-\(index)", host: .api, path: "/bytes/4096?seed=\(index)")))
        }
        // A burst to the host that always fails: each would retry 4 times, the host's retry
        // budget (see `retryBudget`) lets a few through and refuses the rest (`retryDenied`).
        for index in 1...8 {
            steps.append(send(13, DemoRequest(id: "\(w)-burst-\(index)", host: .legacy, path: "/status/503",
                                              retry: ExponentialBackoffRetryPolicy(maxAttempts: 5, baseDelay: 0.5, multiplier: 2, maxDelay: 4, jitter: .equal))))
        }
        // An outage: the stock host goes down at 3 s under a request every 0.4 s. Five
        // attempts in a row without an answer open its breaker (see `circuitBreaker`); the
        // requests then wait without a slot (WAIT circuit) instead of hammering it; a probe at
        // 5 s fails and re-opens it for 4 s; the host is back at 9 s, the probe at 9 s
        // succeeds, the breaker closes and every held request goes out.
        steps.append(Step(at: 3, action: .takeDown(.outage)))
        steps.append(Step(at: 9, action: .bringBack(.outage)))
        for index in 1...20 {
            steps.append(send(2 + Double(index) * 0.4, DemoRequest(id: "\(w)-stock-\(index)", host: .outage, path: "/echo?item=\(index)",
                                                                 retry: ExponentialBackoffRetryPolicy(maxAttempts: 6, baseDelay: 0.5, multiplier: 2, maxDelay: 2, jitter: .equal))))
        }
        return DemoScenario(name: "default", summary: "the full tour, about 20 seconds", steps: steps)
    }

    /// About 3 seconds: a retry, Retry-After, a 404, a cancellation, exhausted retries.
    package static func quick(wave: Int) -> DemoScenario {
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
