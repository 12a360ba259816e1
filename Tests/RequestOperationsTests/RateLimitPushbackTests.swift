import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import XCTest

/// A host's "slow down" holds every request to it: each header throttling servers send,
/// read exactly, and end to end a 429 with Retry-After that holds the next request.
final class RateLimitPushbackTests: XCTestCase {
    private let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func pause(_ status: Int, _ headers: [String: String]) -> TimeInterval? {
        HostRateLimits.pause(status: status, headers: headers, now: now)?.0
    }

    func testEachHeaderThrottlingServersSendIsRead() {
        XCTAssertEqual(pause(429, ["Retry-After": "3"]), 3)
        XCTAssertEqual(pause(503, ["retry-after": RetryAfter.imfFixdate(now.addingTimeInterval(20))]), 20)
        XCTAssertNil(pause(200, ["Retry-After": "3"]), "Retry-After on a success pauses nothing")
        XCTAssertNil(pause(500, ["Retry-After": "3"]))
        XCTAssertEqual(pause(200, ["RateLimit": #""default";r=0;t=30"#]), 30, "the draft's structured field")
        XCTAssertEqual(pause(200, ["RateLimit": #""burst";r=5;t=1, "daily";r=0;t=600"#]), 600, "the first spent quota")
        XCTAssertNil(pause(200, ["RateLimit": #""default";r=4;t=30"#, "RateLimit-Policy": #""default";q=100;w=60"#]))
        XCTAssertEqual(pause(200, ["RateLimit": "limit=100, remaining=0, reset=12"]), 12, "the draft's older form")
        XCTAssertEqual(pause(200, ["RateLimit-Remaining": "0", "RateLimit-Reset": "7"]), 7)
        XCTAssertEqual(pause(403, ["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "\(Int(now.timeIntervalSince1970) + 45)"]), 45,
                       "GitHub's reset is a Unix time")
        XCTAssertEqual(pause(429, ["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "5"]), 5, "others send seconds")
        XCTAssertNil(pause(200, ["X-RateLimit-Remaining": "3", "X-RateLimit-Reset": "5"]))
        XCTAssertNil(pause(200, ["X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "soon"]))
    }

    func testAPauseIsPerHostPublishedOnceUntilItGrowsAndAnImplausibleOneIsIgnored() {
        let clock = ManualClock(now: 0)
        let hub = EventHub(clock: clock, deliveryDelay: 0)
        let recorder = EventRecorder(hub)
        let fixed = now
        let limits = HostRateLimits(maxPause: 60, clock: clock, events: hub, wallClock: { fixed })
        limits.observe("a:80", status: 429) { $0 == "Retry-After" ? "10" : nil }
        XCTAssertEqual(limits.waitUntil("a:80")?.until, 10)
        XCTAssertNil(limits.waitUntil("b:80"), "other hosts go on")
        limits.observe("a:80", status: 429) { $0 == "Retry-After" ? "5" : nil }  // shorter: no change
        limits.observe("a:80", status: 429) { $0 == "Retry-After" ? "86400" : nil }
        XCTAssertEqual(limits.waitUntil("a:80")?.until, 10, "a day is past maxPause: not applied to the host")
        limits.observe("a:80", status: 429) { $0 == "Retry-After" ? "30" : nil }
        XCTAssertEqual(limits.waitUntil("a:80")?.until, 30, "a longer plausible pause")
        clock.advance(by: 30)
        XCTAssertNil(limits.waitUntil("a:80"), "over")
        XCTAssertEqual(recorder.all.map(\.payload), [
            .rateLimited(host: "a:80", until: 10, reason: "429 with Retry-After: 10"),
            .rateLimited(host: "a:80", until: 30, reason: "429 with Retry-After: 30"),
        ])
        XCTAssertEqual(recorder.all.map(\.operationID), ["", ""])
    }

    /// The issue's case: a 429 with Retry-After: 1 to one request; a second request to the
    /// same host, made after it, waits without a slot until the pause is over, then succeeds.
    func testA429WithRetryAfterHoldsTheNextRequestToTheHost() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil, circuitBreaker: nil)
        let recorder = EventRecorder(queue.events)
        let throttled = queue.add(URLRequest(url: server.url("/status/429?retry-after=1")), id: "throttled",
                                  options: RequestOptions(retryPolicy: .never))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(throttled.result?.status, 429)
        let started = Date()
        let next = queue.add(URLRequest(url: server.url("/echo")), id: "next")
        waitFor(5, "the next request to be held") { if case .waitingForRateLimit = next.phase { true } else { false } }
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(server.counters.hits("/echo"), 0, "not sent while the host asked for a pause")
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(next.result?.outcome, .success)
        XCTAssertGreaterThan(Date().timeIntervalSince(started), 0.6, "it waited out the pause")
        XCTAssertEqual(recorder.names(of: "next").prefix(3), ["queued", "rateLimitWaiting", "started"])
        XCTAssertEqual(recorder.all.filter { $0.operationID.isEmpty }.map(\.payload.name), ["rateLimited"])
        let plain = makeQueue(earlyRetry: nil, circuitBreaker: nil, rateLimits: false)
        XCTAssertNil(plain.environment.rateLimits)
    }
}
