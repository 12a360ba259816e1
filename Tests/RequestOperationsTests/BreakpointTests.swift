import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Synchronization
import Testing

/// Breakpoints on every transport: a matching operation stops before its attempt is sent,
/// holding no slot while others flow, and goes on as the person resolves it — sent as it is,
/// edited, answered or failed in the server's place, or cancelled — completing exactly once.
@Suite("Breakpoints on each transport", .serialized)
struct BreakpointTests {
    /// Starts `id` on `path` with a completion counter, and waits until it stops.
    private func stopped(_ queue: RequestQueue, _ server: FaultServer, _ id: String, path: String = "/echo",
                         options: RequestOptions = RequestOptions(retryPolicy: .never)) async throws -> (RequestOperation, Completions) {
        let completions = Completions()
        let operation = queue.add(URLRequest(url: server.url(path)), id: id, options: options) { _ in completions.count.add(1, ordering: .relaxed) }
        try await until("\(id) to stop") { if case .stoppedAtBreakpoint = operation.phase { true } else { false } }
        return (operation, completions)
    }

    @Test(arguments: TransportKind.allCases)
    func eachResolutionGoesOnAsChosenAndCompletesOnce(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 1, transport: kind.make(), earlyRetry: nil, circuitBreaker: nil, rateLimits: false)
        let recorder = EventRecorder(queue.events)
        let point = queue.breakpoints.add(Breakpoint(match: try RequestMatch("path:/echo"), setBy: "test"))

        // Stopped: nothing sent, no slot held (another request runs through the one slot).
        let (sent, sentDone) = try await stopped(queue, server, "proceed")
        #expect(server.counters.requests("/echo").isEmpty)
        let other = try await queue.response(for: URLRequest(url: server.url("/status/200")), id: "other")
        #expect(other.status == 200, "the stopped operation holds no slot")
        #expect(recorder.events(of: "proceed").contains { $0.payload == .breakpoint(id: point, rule: "path:/echo", by: "test") })
        #expect(sent.resolveBreakpoint(.proceed, by: "person"))
        try await until("proceed to end") { sent.result != nil }
        #expect(sent.result?.status == 200 && server.counters.requests("/echo").count == 1)
        #expect(!sent.resolveBreakpoint(.proceed), "resolved once")

        // Edited: the edit is what the server gets.
        let (edited, editedDone) = try await stopped(queue, server, "edit")
        var request = URLRequest(url: server.url("/echo"))
        request.setValue("yes", forHTTPHeaderField: "X-Edited")
        #expect(edited.resolveBreakpoint(.edit(EditedRequest(request: request))))
        try await until("edit to end") { edited.result != nil }
        #expect(server.counters.requests("/echo").last?.headers["x-edited"] == "yes")

        // Answered in the server's place: never sent, marked injected, the validator judges it.
        let (mocked, mockedDone) = try await stopped(queue, server, "mock")
        #expect(mocked.resolveBreakpoint(.respond(status: 201, headers: ["X-Mock": "1"], body: Data(#"{"ok":true}"#.utf8))))
        try await until("mock to end") { mocked.result != nil }
        #expect(mocked.result?.status == 201 && mocked.result?.data == Data(#"{"ok":true}"#.utf8))
        #expect(mocked.result?.headers["X-Mock"] == "1")
        #expect(recorder.events(of: "mock").contains { if case .injected = $0.payload { true } else { false } })
        #expect(server.counters.requests("/echo").count == 2, "the mock was not sent")

        // Failed in the server's place: the retry policy meets it as a real lost connection,
        // and the retry (a new attempt) stops at the breakpoint again.
        let (failed, failedDone) = try await stopped(queue, server, "fail", options: RequestOptions(retryPolicy: quickPolicy(maxAttempts: 2, baseDelay: 0.01)))
        #expect(failed.resolveBreakpoint(.fail(.networkConnectionLost)))
        try await until("the retry to stop again") { failed.phase == .stoppedAtBreakpoint(point) && failed.attempt == 2 }
        #expect(recorder.errors(of: "fail").first?.code == URLError.Code.networkConnectionLost.rawValue)
        #expect(failed.resolveBreakpoint(.proceed))
        try await until("fail to end") { failed.result != nil }
        #expect(failed.result?.status == 200 && failed.result?.attempts.count == 2)

        // Cancelled.
        let (cancelled, cancelledDone) = try await stopped(queue, server, "cancel")
        #expect(cancelled.resolveBreakpoint(.cancel, by: "person"))
        try await until("cancel to end") { cancelled.result != nil }
        #expect(cancelled.result?.outcome == .cancelled)

        try await Task.sleep(nanoseconds: 100_000_000)
        for done in [sentDone, editedDone, mockedDone, failedDone, cancelledDone] {
            #expect(done.count.load(ordering: .relaxed) == 1, "completion exactly once")
        }
        #expect(server.counters.requests("/echo").count == 3)
    }

    @Test(arguments: TransportKind.allCases)
    func removingABreakpointLetsWhatItStoppedGoOn(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        let point = queue.breakpoints.add(Breakpoint(match: try RequestMatch("path:/echo")))
        let (first, _) = try await stopped(queue, server, "first")
        let (second, _) = try await stopped(queue, server, "second")
        #expect(queue.breakpoints.remove(point))
        try await until("both to end") { first.result != nil && second.result != nil }
        #expect(first.result?.status == 200 && second.result?.status == 200)
        #expect(!queue.breakpoints.isActive)
        // Off, a breakpoint stops nothing; on again, it does.
        let recorder = EventRecorder(queue.events)
        let later = queue.breakpoints.add(Breakpoint(match: try RequestMatch("path:/echo")))
        queue.breakpoints.setEnabled(later, false)
        #expect(try await queue.response(for: URLRequest(url: server.url("/echo")), id: "through").status == 200)
        queue.breakpoints.remove(later)
        // Each change is said, for the monitor's list.
        try await until("the changes to be said") { recorder.events(of: "").count >= 3 }
        #expect(recorder.events(of: "").map(\.payload) == [
            .breakpointSet(id: later, rule: "path:/echo", by: "library", enabled: true, afterResponse: false),
            .breakpointSet(id: later, rule: "path:/echo", by: "library", enabled: false, afterResponse: false),
            .breakpointRemoved(id: later),
        ])
    }
}

/// How many times an operation's completion ran.
final class Completions: Sendable {
    let count = Atomic<Int>(0)
}

/// A stop after the answer, before the retry decision (the person chooses the stage).
@Suite("Breakpoints after the answer, on each transport", .serialized)
struct AfterResponseBreakpointTests {
    @Test(arguments: TransportKind.allCases)
    func theAnswerWaitsWithoutASlotThenGoesOnToTheDecision(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 1, transport: kind.make(), earlyRetry: nil, circuitBreaker: nil, rateLimits: false)
        let recorder = EventRecorder(queue.events)
        queue.breakpoints.add(try Breakpoint(parsing: "after path:/flaky", setBy: "test"))
        let options = RequestOptions(retryPolicy: quickPolicy(maxAttempts: 4, baseDelay: 0.01))
        let key = "after-\(kind)-\(UUID().uuidString.prefix(6))"
        let operation = queue.add(URLRequest(url: server.url("/flaky/\(key)?failures=1&status=503")), id: "flaky", options: options)
        try await until("the 503 to stop") { operation.breakpointStage == .afterResponse }
        #expect(server.counters.hits("/flaky/\(key)") == 1, "sent once, answered, stopped")
        #expect(operation.attempt == 1, "no retry decided yet")
        let other = try await queue.response(for: URLRequest(url: server.url("/status/200")), id: "other")
        #expect(other.status == 200, "the stopped answer holds no slot")
        #expect(!operation.resolveBreakpoint(.edit(EditedRequest(request: URLRequest(url: server.url("/echo"))))), "the request went: no edit")
        // Continue: on to the retry policy, which retries the 503.
        #expect(operation.resolveBreakpoint(.proceed, by: "person"))
        try await until("the retry's answer to stop") { operation.breakpointStage == .afterResponse && operation.attempt == 2 }
        // Fail a good answer by hand: the policy retries.
        #expect(operation.resolveBreakpoint(.fail(.timedOut), by: "person"))
        try await until("the third attempt to stop") { operation.breakpointStage == .afterResponse && operation.attempt == 3 }
        // Answer instead of the server (a 503): judged as the server's would be, so retried.
        #expect(operation.resolveBreakpoint(.respond(status: 503, headers: [:], body: Data("busy".utf8)), by: "person"))
        try await until("the fourth attempt to stop") { operation.breakpointStage == .afterResponse && operation.attempt == 4 }
        // And a good answer of one's own ends it.
        #expect(operation.resolveBreakpoint(.respond(status: 201, headers: ["X-Mock": "1"], body: Data("mocked".utf8))))
        try await until("the end") { operation.result != nil }
        #expect(operation.result?.status == 201 && operation.result?.data == Data("mocked".utf8) && operation.result?.attempts.count == 4)
        #expect(operation.result?.headers["X-Mock"] == "1")
        #expect(server.counters.hits("/flaky/\(key)") == 4, "every attempt was sent; two answers were replaced")
        let stops = recorder.events(of: "flaky").filter { if case .breakpoint(_, _, _, true) = $0.payload { true } else { false } }
        #expect(stops.count == 4)
        #expect(recorder.events(of: "flaky").filter { if case .injected = $0.payload { true } else { false } }.count == 2)

        // Cancel after the answer.
        let cancelled = queue.add(URLRequest(url: server.url("/flaky/\(key)-c?failures=0")), id: "cancel", options: options)
        try await until("it to stop") { cancelled.breakpointStage == .afterResponse }
        #expect(cancelled.resolveBreakpoint(.cancel, by: "person"))
        try await until("the cancel") { cancelled.result != nil }
        #expect(cancelled.result?.outcome == .cancelled)
    }
}

/// Polls until `condition` holds (real time, wide bound: 5 s).
func until(_ what: String, _ condition: () -> Bool) async throws {
    for _ in 0..<1000 {
        if condition() { return }
        try await Task.sleep(nanoseconds: 5_000_000)
    }
    Issue.record("timed out waiting for \(what)")
}
