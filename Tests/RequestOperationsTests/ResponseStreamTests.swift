import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import RequestTransportNIO
import Testing

/// A body read part by part as it arrives (#32: "a streamed response for the library"), on
/// each transport: retried until a valid answer began, never after; a slow reader holds the
/// connection back on NIO and is bounded on URLSession; a reader that stops cancels.
@Suite("Streamed answers, on each transport", .serialized)
struct ResponseStreamTests {
    @Test(arguments: TransportKind.allCases)
    func aBodyIsReadPartByPartWholeAndInOrder(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let answer = try await queue.stream(for: URLRequest(url: server.url("/bytes/3000000?seed=2")), id: "s")
        #expect(answer.status == 200)
        var received = Data()
        var parts = 0
        for try await part in answer.body {
            received.append(part)
            parts += 1
        }
        #expect(received == Data(FaultServer.expectedBytes(count: 3_000_000, seed: 2)))
        #expect(parts > 1, "in parts, not whole")
        let result = await answer.operation.finished
        #expect(result.outcome == .success && result.data.isEmpty, "the body went to the reader, not the result")
        // Its first bytes, up to the body cap, kept for the events as they passed: no more.
        let said = recorder.events(of: "s").compactMap { if case .responseBody(let body, let total, let cut, _) = $0.payload { (body, total, cut) } else { nil } }
        #expect(said.count == 1)
        #expect(said.last?.0 == .bytes(received.prefix(RequestOptions.defaultResponseBodyCap)), "the first 64 KiB, as they came")
        #expect(said.last?.1 == 3_000_000 && said.last?.2 == true)
    }

    @Test(arguments: TransportKind.allCases)
    func failuresBeforeTheAnswerAreRetriedAndNoneAfterItBegan(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        let policy = ExponentialBackoffRetryPolicy(maxAttempts: 3, baseDelay: 0.01, jitter: .none)
        let flaky = try await queue.stream(for: URLRequest(url: server.url("/flaky/stream-\(kind)?failures=1&status=503")),
                                           options: RequestOptions(retryPolicy: policy))
        #expect(flaky.status == 200)
        var body = Data()
        for try await part in flaky.body { body.append(part) }
        #expect(await flaky.operation.finished.attempts.count == 2, "the 503 before the answer was retried")

        let cut = try await queue.stream(for: URLRequest(url: server.url("/close-mid-body?bytes=400000")), id: "cut",
                                         options: RequestOptions(retryPolicy: policy))
        var read = 0
        do {
            for try await part in cut.body { read += part.count }
            Issue.record("a body cut off mid-way must end the reading with an error")
        } catch let error as RequestError {
            #expect(error.result.attempts.count == 1, "not retried once the body began: \(error.result.attempts.count) attempts")
            #expect(error.result.attempts.last?.decision?.contains("reaching the caller's stream") == true,
                    "\(String(describing: error.result.attempts.last?.decision))")
        }
        #expect(read <= 200_000)

        do {
            _ = try await queue.stream(for: URLRequest(url: server.url("/status/404")), options: RequestOptions(retryPolicy: .never))
            Issue.record("a 404 is no answer to stream")
        } catch let error as RequestError {
            #expect(error.result.status == 404)
        }
    }

    @Test(arguments: TransportKind.allCases)
    func aReaderThatStopsEarlyCancelsTheRequest(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        let answer = try await queue.stream(for: URLRequest(url: server.url("/drip?bytes=100000&duration=8000&chunks=80")), id: "drip")
        for try await _ in answer.body { break }
        // Timed from the reader's stop, not the start: on a loaded machine FoundationNetworking
        // has handed over the first part 4 s late (CI, with the suites running side by side).
        let stopped = Date()
        let result = await answer.operation.finished
        #expect(result.outcome == .cancelled, "\(result.outcome)")
        let after = Date().timeIntervalSince(stopped)
        #expect(after < 2, "ended when the reader stopped, not with the drip: \(after) s after the stop, \(result.duration) s in all")
    }

    /// On NIO a reader that falls behind holds the connection's reads back: what was read
    /// from it stays near the buffer's size, not the body's.
    @Test func aSlowReaderHoldsTheNIOConnectionBack() async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: TransportKind.nio.make(), earlyRetry: nil)
        let size = 24 << 20
        let answer = try await queue.stream(for: URLRequest(url: server.url("/bytes/\(size)?seed=1")), id: "slow", bufferSize: 1 << 20)
        var iterator = answer.body.makeAsyncIterator()
        var total = try await iterator.next()?.count ?? 0
        try await Task.sleep(for: .milliseconds(600))
        let readMeanwhile = answer.operation.attempts.last?.bytes ?? 0
        #expect(readMeanwhile < 8 << 20, "read \(readMeanwhile) bytes of \(size) while the reader slept; buffer \(answer.body.capacity)")
        while let part = try await iterator.next() { total += part.count }
        #expect(total == size)
    }

    /// An injected cut (a fault rule) keeps the stream's back-pressure until it cuts, then
    /// ends the reading after exactly the bytes it allowed.
    @Test func aStreamUnderAnInjectedCutIsStillHeldBackAndEndsAtTheCut() async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: TransportKind.nio.make(), earlyRetry: nil)
        let allowed = 12 << 20
        queue.faults.add(FaultRule(match: try RequestMatch("path:/bytes"), effect: .truncate(afterBytes: allowed)))
        let answer = try await queue.stream(for: URLRequest(url: server.url("/bytes/\(16 << 20)?seed=1")), id: "cut",
                                            options: RequestOptions(retryPolicy: .never), bufferSize: 1 << 20)
        var iterator = answer.body.makeAsyncIterator()
        var total = try await iterator.next()?.count ?? 0
        try await Task.sleep(for: .milliseconds(600))
        let readMeanwhile = answer.operation.attempts.last?.bytes ?? 0
        #expect(readMeanwhile < 6 << 20, "read \(readMeanwhile) bytes while the reader slept: the fault's wrapper lost the pacing")
        do {
            while let part = try await iterator.next() { total += part.count }
            Issue.record("the injected cut must end the reading with an error")
        } catch let error as RequestError {
            #expect(error.result.attempts.last?.failure == .transport(.networkConnectionLost), "\(error)")
        }
        #expect(total == allowed)
    }

    /// URLSession cannot be told to wait: a reader more than `maxResponseBytes` behind ends it
    /// by name rather than filling the memory.
    @Test func aReaderFarBehindOnURLSessionEndsByName() async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: TransportKind.urlsession.make(), earlyRetry: nil)
        var options = RequestOptions(retryPolicy: .never)
        options.maxResponseBytes = 2 << 20
        let answer = try await queue.stream(for: URLRequest(url: server.url("/bytes/\(32 << 20)?seed=1")), id: "behind", options: options)
        // The reader waits until the request ended (far behind, it must) — not a fixed nap,
        // which a loaded machine's slower transfer outlasted.
        let end = Date().addingTimeInterval(30)
        while !answer.operation.isFinished, Date() < end { try await Task.sleep(for: .milliseconds(10)) }
        do {
            for try await _ in answer.body {}
            Issue.record("a reader 30 MiB behind a 2 MiB limit must be told")
        } catch let error as RequestError {
            #expect(error.result.attempts.last?.failure == .transport(.dataLengthExceedsMaximum))
            #expect("\(error)".contains("fell more than"), "\(error)")
        }
    }
}
