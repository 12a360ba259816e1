import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Testing

/// What a person does at a breakpoint is exact (#42): their thinking time is not the
/// upstream's (the deadline stands still while the operation is stopped), and an answer
/// given after the server's replaces it in every event that follows.
@Suite("Breakpoints are exact, on each transport", .serialized)
struct BreakpointTimeTests {
    /// On an injected clock (a countdown is tested exactly, not against a loaded machine's time).
    @Test(arguments: TransportKind.allCases)
    func theDeadlineStandsStillWhileStoppedAndRunsOnAfter(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let clock = ManualClock()
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), clock: clock, earlyRetry: nil, circuitBreaker: nil, rateLimits: false)
        queue.breakpoints.add(Breakpoint(match: try RequestMatch("path:/delay"), setBy: "test"))
        var options = RequestOptions(retryPolicy: .never)
        options.deadline = 60
        // Stopped for ten minutes with a deadline of one: it does not fail while a person reads it.
        let read = queue.add(URLRequest(url: server.url("/delay/10")), id: "read", options: options)
        try await until("it to stop") { read.breakpointStage == .beforeSend }
        clock.advance(by: 600)
        #expect(read.result == nil, "600 s stopped, deadline 60 s: not failed")
        #expect(read.resolveBreakpoint(.proceed))
        try await until("it to end") { read.result != nil }
        #expect(read.result?.status == 200)

        // Its clock runs on from where it stood: the 1,000 s stopped do not count.
        let slow = queue.add(URLRequest(url: server.url("/delay/3000")), id: "slow", options: options)
        try await until("slow to stop") { slow.breakpointStage == .beforeSend }
        clock.advance(by: 1_000)
        #expect(slow.resolveBreakpoint(.proceed))
        try await until("slow to be sent") { slow.phase == .inFlight }
        clock.advance(by: 59)
        #expect(slow.result == nil, "59 of its 60 s gone")
        clock.advance(by: 2)
        try await until("slow to end") { slow.result != nil }
        #expect(slow.result?.outcome == .failure, "the deadline still holds once it runs")
    }

    @Test(arguments: TransportKind.allCases)
    func anAnswerGivenAfterTheServersReplacesItsBodyToo(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 1, transport: kind.make(), earlyRetry: nil, circuitBreaker: nil, rateLimits: false)
        let recorder = EventRecorder(queue.events)
        queue.breakpoints.add(try Breakpoint(parsing: "after path:/status/404", setBy: "test"))
        let operation = queue.add(URLRequest(url: server.url("/status/404")), id: "mock", options: RequestOptions(retryPolicy: .never))
        try await until("the 404 to stop") { operation.breakpointStage == .afterResponse }
        let body = Data(#"{"ok":true,"n":1}"#.utf8)
        #expect(operation.resolveBreakpoint(.respond(status: 200, headers: ["Content-Type": "application/json"], body: body), by: "person"))
        try await until("the end") { operation.result != nil }
        #expect(operation.result?.status == 200 && operation.result?.data == body)
        try await until("the events") { recorder.events(of: "mock").contains { if case .finished = $0.payload { true } else { false } } }
        let events = recorder.events(of: "mock")
        let injected = try #require(events.firstIndex { if case .injected = $0.payload { true } else { false } })
        let after = events[injected...].map(\.payload)
        #expect(after.contains { if case .response(200, _, 17, _) = $0 { true } else { false } })
        #expect(after.contains(.data(bytes: 17)), "the answer's bytes are counted as received")
        #expect(after.contains { if case .responseBody(.bytes(body), 17, false, "application/json") = $0 { true } else { false } },
                "the body every view and recording shows is the answer given")
    }
}
