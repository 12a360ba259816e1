import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestMetrics
import RequestOperations
import RequestTracing
import RequestTransportNIO

/// What the tracing and metrics instruments cost when no backend is bootstrapped (the
/// default: a no-op tracer, a no-op metrics factory) — and, for scale, with a tracer and a
/// metrics factory that keep nothing but are real: the same chains of GETs on a queue with
/// `RequestTracer()` and `RequestMetrics()` and on one without, alternating, on each
/// transport. Requests per second.
enum InstrumentCost {
    static func run(requests: Int, inFlight: Int, url: URL, transport: RequestTransport?, instruments: [RequestInstrument]) -> Double {
        let queue = RequestQueue(maxConcurrentRequests: inFlight, transport: transport, instruments: instruments)
        return Chains.gets(on: queue, requests: requests, inFlight: inFlight, url: url)
    }

    static func report(requests: Int, rounds: Int, url: URL) {
        for (name, transport) in [("urlsession", nil), ("nio", NIOTransport.shared as RequestTransport?)] {
            _ = run(requests: requests / 4, inFlight: 8, url: url, transport: transport, instruments: [])  // warm up
            for inFlight in [1, 8] {
                var best = (without: 0.0, noop: 0.0)
                for _ in 0..<rounds {
                    best.without = max(best.without, run(requests: requests, inFlight: inFlight, url: url, transport: transport, instruments: []))
                    // Not bootstrapped: InstrumentationSystem.tracer and MetricsSystem.factory are no-ops.
                    best.noop = max(best.noop, run(requests: requests, inFlight: inFlight, url: url, transport: transport,
                                                   instruments: [RequestTracer(), RequestMetrics()]))
                }
                print(String(format: "instruments, %@, %d in flight: none %.0f req/s | tracer and metrics, no backend %.0f req/s (%.3f)",
                             name, inFlight, best.without, best.noop, best.noop / best.without))
            }
        }
    }
}
