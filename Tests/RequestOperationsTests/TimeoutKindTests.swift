import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Testing

/// Every timeout named by its kind, on every transport: a stalled answer ends by the read
/// timeout (reset by every byte, so a slow healthy one is not cut), a long one by the attempt
/// timeout. Before, both came out as the same -1001, and NIO had no read timeout at all.
@Suite("Timeouts by kind on each transport", .serialized)
struct TimeoutKindTests {
    private func failure(_ queue: RequestQueue, _ url: URL, _ options: RequestOptions) async -> (TransportError?, TimeInterval) {
        let recorder = EventRecorder(queue.events)
        let start = Date()
        _ = try? await queue.response(for: URLRequest(url: url), id: "t", options: options)
        let elapsed = Date().timeIntervalSince(start)
        let error = recorder.errors(of: "t").last
        return (error, elapsed)
    }

    @Test(arguments: TransportKind.allCases)
    func aStalledAnswerEndsByTheReadTimeoutAndALongOneByTheAttempts(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 4, transport: kind.make(), earlyRetry: nil)
        var read = RequestOptions(retryPolicy: .never)
        read.readTimeout = 0.3
        let (stalled, took) = await failure(queue, server.url("/hang"), read)
        #expect(stalled?.code == -1001)
        #expect(stalled?.timeout == .read, "\(String(describing: stalled))")
        #expect(stalled?.message == "no byte for 300 ms (read timeout)" || stalled?.message.contains("read timeout") == true)
        // Well under the 60 s defaults it must not fall back to: 5.76 s once in a clean CI
        // run, URLSession's first request of the process while 34 suites started at once.
        #expect(took >= 0.25 && took < 20, "\(took)")

        // Twenty bytes over 10 s, one every 500 ms: each byte resets the read timeout (6 s
        // here: twelve gaps' worth, and 0.6 of the whole, so without the resets it would end the
        // attempt). Callbacks come late on a loaded machine: at 1.2 s against 120 ms gaps this
        // failed in a clean CI run beside the parallel suites' large bodies, at 2.5 s against
        // 250 ms gaps on NIO beside the decompression-bomb suites, and at 4 s in two of three
        // full runs on this 2-core machine (the suites run in parallel, sharing NIO's loops).
        var patient = read
        patient.readTimeout = 6
        let dripping = try await queue.response(for: URLRequest(url: server.url("/drip?bytes=20&duration=10000&chunks=20")), id: "drip", options: patient)
        #expect(dripping.status == 200 && dripping.data.count == 20)

        var attempt = RequestOptions(retryPolicy: .never, attemptTimeout: 0.3)
        attempt.readTimeout = nil
        let (long, _) = await failure(queue, server.url("/drip?bytes=10&duration=1200&chunks=10"), attempt)
        #expect(long?.timeout == .attempt, "\(String(describing: long))")
        #expect(RequestOptions().readTimeout == 60, "the documented default")
    }

    /// An attempt the engine ends (here a cancel, once bytes came; the deadline takes the
    /// same path) still tells every byte it read in `data` events: they come once per
    /// 256 KiB or 100 ms, and the ended attempt's task never completes as current to tell
    /// the rest.
    @Test(arguments: TransportKind.allCases)
    func anAttemptTheEngineEndsTellsEveryByteItRead(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        var options = RequestOptions(retryPolicy: .never)
        options.readTimeout = nil
        let operation = queue.add(URLRequest(url: server.url("/drip?bytes=2000&duration=4000&chunks=200")), id: "cut", options: options)
        // Bounded: the drip's first bytes come within 20 ms, or a loaded machine's seconds.
        let end = Date().addingTimeInterval(20)
        while (operation.attempts.last?.bytes ?? 0) < 100, Date() < end { try await Task.sleep(for: .milliseconds(5)) }
        operation.cancel()
        let result = await operation.finished
        let read = try #require(result.attempts.last).bytes
        let told = recorder.events(of: "cut").reduce(0) { sum, event in
            if case .data(let bytes) = event.payload { sum + bytes } else { sum }
        }
        #expect(read >= 100, "the drip's bytes came before the cancel")
        #expect(told == read, "data events told \(told) of the \(read) bytes read")
    }
}
