import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Synchronization
import XCTest

/// Every edge of the default per-host breaker, exact with the manual clock, and end to end
/// against a host that is down and comes back.
final class CircuitBreakerTests: XCTestCase {
    private func breaker(_ clock: ManualClock, _ options: HostCircuitBreaker.Options = .init()) -> (HostCircuitBreaker, EventRecorder) {
        let hub = EventHub(clock: clock, deliveryDelay: 0)
        return (HostCircuitBreaker(options: options, clock: clock, events: hub), EventRecorder(hub))
    }

    /// Admits one attempt and records `verdict` for it; fails the test if it was not let through.
    private func attempt(_ breaker: HostCircuitBreaker, _ verdict: CircuitVerdict, host: String = "h:80",
                         file: StaticString = #filePath, line: UInt = #line) {
        guard case .send(let pass) = breaker.admit(host, whenReady: {}) else {
            return XCTFail("not let through", file: file, line: line)
        }
        pass.record(verdict)
    }

    private func isWait(_ admission: CircuitAdmission) -> Bool {
        if case .wait = admission { true } else { false }
    }

    func testFiveAttemptsInARowWithoutAnAnswerOpenItAndASuccessBreaksTheRun() {
        let clock = ManualClock(now: 0)
        let (breaker, recorder) = breaker(clock)
        for _ in 0..<4 { attempt(breaker, .failedConnection("cannot connect to host")) }
        attempt(breaker, .success)
        for _ in 0..<4 { attempt(breaker, .failedConnection("cannot connect to host")) }
        XCTAssertEqual(breaker.states()["h:80"], .closed, "four in a row after a success")
        attempt(breaker, .failedConnection("cannot connect to host"))
        XCTAssertEqual(breaker.states()["h:80"], .open(until: 5, reason: "5 attempts in a row got no answer"))
        XCTAssertTrue(isWait(breaker.admit("h:80", whenReady: {})))
        XCTAssertEqual(breaker.states()["other:80"], nil, "other hosts are not touched")
        XCTAssertEqual(recorder.all.map(\.payload),
                       [.circuitOpened(host: "h:80", reason: "5 attempts in a row got no answer", until: 5)])
        XCTAssertEqual(recorder.all.first?.operationID, "", "host-level events belong to no operation")
    }

    func testAFailureRatioOpensItOnlyWithEnoughAttemptsAndOther4xxNeverCount() {
        let clock = ManualClock(now: 0)
        let (breaker, _) = breaker(clock, .init(consecutiveConnectionFailures: 0))
        for _ in 0..<30 { attempt(breaker, .success) }  // 404s are successes to a breaker
        XCTAssertEqual(CircuitVerdict.judging(status: 404, failure: .status(404, headers: [:])), .success)
        XCTAssertEqual(CircuitVerdict.judging(status: 429, failure: .status(429, headers: [:])), .failedStatus(429))
        XCTAssertEqual(CircuitVerdict.judging(status: 408, failure: nil), .failedStatus(408))
        XCTAssertNil(CircuitVerdict.judging(status: nil, failure: .transport(.cancelled)), "cancelled is no verdict")
        XCTAssertNil(CircuitVerdict.judging(status: nil, failure: .preparation("x")), "never sent")
        clock.advance(by: 11)  // the successes leave the window
        for _ in 0..<9 { attempt(breaker, .success) }
        for _ in 0..<10 { attempt(breaker, .failedStatus(503)) }
        XCTAssertEqual(breaker.states()["h:80"], .closed, "19 attempts: below the minimum of 20")
        attempt(breaker, .failedStatus(503))
        XCTAssertEqual(breaker.states()["h:80"], .open(until: 16, reason: "11 of 20 attempts failed in 10s (55 %)"))
    }

    func testHalfOpenLetsExactlyOneProbeThroughAndItsSuccessReleasesEveryWaiter() {
        let clock = ManualClock(now: 0)
        let (breaker, recorder) = breaker(clock)
        for _ in 0..<5 { attempt(breaker, .failedConnection("x")) }
        let woken = Mutex<[Int]>([])
        for n in 0..<3 { XCTAssertTrue(isWait(breaker.admit("h:80") { woken.withLock { $0.append(n) } })) }
        clock.advance(by: 4.9)
        XCTAssertEqual(woken.withLock { $0 }, [])
        clock.advance(by: 0.1)
        XCTAssertEqual(breaker.states()["h:80"], .halfOpen)
        XCTAssertEqual(woken.withLock { $0 }, [0], "the first waiter is woken to probe")
        guard case .send(let probe) = breaker.admit("h:80", whenReady: {}) else { return XCTFail("no probe") }
        XCTAssertTrue(probe.isProbe)
        XCTAssertTrue(isWait(breaker.admit("h:80", whenReady: {})), "one probe at a time")
        probe.record(.success)
        XCTAssertEqual(breaker.states()["h:80"], .closed)
        XCTAssertEqual(Set(woken.withLock { $0 }), [0, 1, 2], "everyone waiting goes out")
        let names = recorder.all.map(\.payload.name)
        XCTAssertEqual(names, ["circuitOpened", "circuitHalfOpen", "circuitClosed"])
        if case .circuitClosed(_, let reason) = recorder.all.last?.payload { XCTAssertEqual(reason, "the probe succeeded") }
    }

    func testAFailedProbeReopensItForTwiceAsLongUpToTheCap() {
        let clock = ManualClock(now: 0)
        let (breaker, _) = breaker(clock, .init(openFor: 5, maxOpenFor: 15))
        for _ in 0..<5 { attempt(breaker, .failedConnection("x")) }
        var expected: [TimeInterval] = []
        for length in [10.0, 15, 15] {
            clock.advance(by: clock.nextDeadline! - clock.now())
            XCTAssertEqual(breaker.states()["h:80"], .halfOpen)
            attempt(breaker, .failedStatus(503))
            expected.append(length)
            XCTAssertEqual(breaker.states()["h:80"], .open(until: clock.now() + length, reason: "the probe failed: status 503"))
        }
        // A probe that ends without an answer (cancelled) lets the next attempt probe.
        clock.advance(by: 15)
        guard case .send(let probe) = breaker.admit("h:80", whenReady: {}) else { return XCTFail("no probe") }
        XCTAssertTrue(isWait(breaker.admit("h:80", whenReady: {})))
        probe.giveBack()
        guard case .send(let next) = breaker.admit("h:80", whenReady: {}) else { return XCTFail("no second probe") }
        XCTAssertTrue(next.isProbe)
        next.record(.success)
        // Closed again, the next opening starts from the first length.
        for _ in 0..<5 { attempt(breaker, .failedConnection("x")) }
        XCTAssertEqual(breaker.states()["h:80"], .open(until: clock.now() + 5, reason: "5 attempts in a row got no answer"))
    }

    /// `isClosed` answers without a look-up while every breaker is closed (a count of the
    /// others): it must agree with `states()` through every transition, on two hosts at once.
    func testIsClosedAgreesWithTheStatesThroughEveryTransition() {
        let clock = ManualClock(now: 0)
        let (breaker, _) = breaker(clock)
        func check(_ when: String, line: UInt = #line) {
            for host in ["h:80", "g:80", "never:80"] {
                XCTAssertEqual(breaker.isClosed(host), (breaker.states()[host] ?? .closed) == .closed, "\(host) \(when)", line: line)
            }
        }
        check("at first")
        for _ in 0..<5 { attempt(breaker, .failedConnection("x")) }
        XCTAssertFalse(breaker.isClosed("h:80"))
        check("h opened by failures")
        breaker.isolate("g:80", by: "test")
        check("g isolated")
        clock.advance(by: 5)
        XCTAssertEqual(breaker.states()["h:80"], .halfOpen)
        check("h half-open by its timer")
        attempt(breaker, .failedStatus(503))
        check("h's probe failed")
        clock.advance(by: 10)
        attempt(breaker, .success)
        check("h's probe succeeded")
        XCTAssertTrue(breaker.isClosed("h:80"))
        XCTAssertTrue(breaker.close("g:80", by: "test"))
        check("g closed by hand")
        XCTAssertTrue(breaker.isClosed("g:80"))
        XCTAssertFalse(breaker.close("g:80", by: "test"), "closed already")
        check("closing a closed one")
        breaker.isolate("never:80", by: "test")
        breaker.isolate("never:80", by: "test again")
        check("isolated twice")
        XCTAssertTrue(breaker.close("never:80", by: "test"))
        check("all closed again")
    }

    func testVerdictsOfAttemptsLetThroughBeforeItOpenedAreIgnored() {
        let clock = ManualClock(now: 0)
        let (breaker, _) = breaker(clock)
        guard case .send(let late) = breaker.admit("h:80", whenReady: {}) else { return XCTFail() }
        for _ in 0..<5 { attempt(breaker, .failedConnection("x")) }
        clock.advance(by: 5)
        guard case .send(let probe) = breaker.admit("h:80", whenReady: {}) else { return XCTFail() }
        late.record(.success)  // sent while closed, answered now: not the probe's word
        XCTAssertEqual(breaker.states()["h:80"], .halfOpen)
        probe.record(.success)
        probe.record(.failedStatus(500))  // a pass speaks once
        XCTAssertEqual(breaker.states()["h:80"], .closed)
    }

    func testIsolatingHoldsEveryAttemptUntilClosedByHandAndFailFastRefuses() {
        let clock = ManualClock(now: 0)
        let (breaker, recorder) = breaker(clock)
        breaker.isolate("h:80", by: "monitor")
        let woken = Mutex(false)
        XCTAssertTrue(isWait(breaker.admit("h:80") { woken.withLock { $0 = true } }))
        clock.advance(by: 1_000)
        XCTAssertEqual(breaker.states()["h:80"], .open(until: nil, reason: "isolated by monitor"))
        XCTAssertTrue(breaker.close("h:80", by: "monitor"))
        XCTAssertFalse(breaker.close("h:80", by: "monitor"), "already closed")
        XCTAssertTrue(woken.withLock { $0 })
        XCTAssertEqual(recorder.all.map(\.payload), [
            .circuitOpened(host: "h:80", reason: "isolated by monitor", until: nil),
            .circuitClosed(host: "h:80", reason: "closed by monitor"),
        ])

        let (fast, _) = self.breaker(clock, .init(failFast: true))
        for _ in 0..<5 { attempt(fast, .failedConnection("x")) }
        guard case .refuse(let reason) = fast.admit("h:80", whenReady: {}) else { return XCTFail("not refused") }
        XCTAssertEqual(reason, "circuit for h:80 is open for 5s: 5 attempts in a row got no answer")
    }

    /// A process that talks to many hosts keeps the breakers that matter, not every host it
    /// ever saw: quiet closed ones are let go past 4,096; an open one is kept.
    func testQuietBreakersAreLetGoButOpenOnesAreKept() {
        let clock = ManualClock(now: 0)
        let (breaker, _) = breaker(clock)
        for _ in 0..<5 { attempt(breaker, .failedConnection("x"), host: "down:80") }
        for index in 0..<5_000 { attempt(breaker, .success, host: "h\(index):80") }
        XCTAssertGreaterThan(breaker.states().count, 5_000, "nothing is quiet yet: every success is in the window")
        clock.advance(by: 11)
        // The pass at 4,096 freed nothing (all in the window), so the next is at twice that.
        for index in 0..<3_200 { _ = breaker.admit("new\(index):80", whenReady: {}) }
        let states = breaker.states()
        XCTAssertLessThan(states.count, 100, "\(states.count) kept")
        XCTAssertNotNil(states["down:80"], "an open breaker is never forgotten")
    }

    /// The measure: 50 requests to a host that is down. Once the breaker opens they
    /// stop connecting and wait without a slot; when the host comes back the probe succeeds
    /// and all 50 succeed shortly after.
    func testFiftyRequestsToADeadHostWaitForTheBreakerAndAllSucceedWhenItComesBack() throws {
        let dead = try FaultServer.start()
        let port = dead.port
        dead.stop()
        let queue = makeQueue(maxConcurrentRequests: 8, earlyRetry: nil, retryBudget: nil,
                              circuitBreaker: .init(openFor: 0.3, maxOpenFor: 0.3))
        let recorder = EventRecorder(queue.events)
        let policy = ExponentialBackoffRetryPolicy(maxAttempts: 20, baseDelay: 0.05, maxDelay: 0.1, jitter: .none, retryBudget: nil)
        let operations = (0..<50).map { n in
            queue.add(URLRequest(url: URL(string: "http://127.0.0.1:\(port)/echo?n=\(n)")!), id: "dead-\(n)",
                      options: RequestOptions(retryPolicy: policy))
        }
        let deadline = Date().addingTimeInterval(10)
        while !recorder.all.contains(where: { $0.payload.name == "circuitOpened" }), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertTrue(recorder.all.contains { $0.payload.name == "circuitOpened" }, "the breaker never opened")
        // Let it probe (and fail) a few times while the host is down.
        Thread.sleep(forTimeInterval: 1.0)
        let whileDown = recorder.all.filter { $0.payload.name == "taskCreated" }.count
        let held = recorder.all.filter { $0.payload.name == "circuitWaiting" }.count
        XCTAssertGreaterThan(held, 30, "most requests waited for the breaker instead of connecting")
        XCTAssertLessThan(whileDown, 50 + 20, "attempts while the host was down stopped at the breaker (one probe per opening)")
        let server = try startServer(port: port)
        let end = Date().addingTimeInterval(20)
        while operations.contains(where: { $0.result == nil }), Date() < end { Thread.sleep(forTimeInterval: 0.02) }
        XCTAssertEqual(operations.filter { $0.result?.outcome == .success }.count, 50)
        XCTAssertEqual(server.counters.hits("/echo"), 50, "each request reached the host once it was back")
        let names = recorder.all.filter { $0.operationID.isEmpty }.map(\.payload.name)
        XCTAssertEqual(names.last, "circuitClosed")
        XCTAssertTrue(names.contains("circuitHalfOpen"))
    }
}
