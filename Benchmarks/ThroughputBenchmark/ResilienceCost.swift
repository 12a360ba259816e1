import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations
import RequestTransportNIO

/// What the per-host retry budget, circuit breaker and rate-limit pushback (all on by
/// default) cost a healthy host: the same chains of GETs on a queue with them and on one
/// without, alternating, on each transport. Requests per second.
enum ResilienceCost {
    static func run(requests: Int, inFlight: Int, url: URL, transport: RequestTransport?, resilient: Bool) -> Double {
        let queue = resilient
            ? RequestQueue(maxConcurrentRequests: inFlight, transport: transport)
            : RequestQueue(maxConcurrentRequests: inFlight, transport: transport, retryBudget: nil, circuitBreaker: nil, rateLimits: false)
        return Chains.gets(on: queue, requests: requests, inFlight: inFlight, url: url)
    }

    static func report(requests: Int, rounds: Int, url: URL) {
        for (name, transport) in [("urlsession", nil), ("nio", NIOTransport.shared as RequestTransport?)] {
            _ = run(requests: requests / 4, inFlight: 8, url: url, transport: transport, resilient: true)  // warm up
            for inFlight in [1, 8] {
                var best = (without: 0.0, with: 0.0)
                for _ in 0..<rounds {
                    best.without = max(best.without, run(requests: requests, inFlight: inFlight, url: url, transport: transport, resilient: false))
                    best.with = max(best.with, run(requests: requests, inFlight: inFlight, url: url, transport: transport, resilient: true))
                }
                print(String(format: "resilience, %@, %d in flight: without %.0f req/s | budget, breaker, pushback %.0f req/s (%.3f)",
                             name, inFlight, best.without, best.with, best.with / best.without))
            }
        }
    }
}
