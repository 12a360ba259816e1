import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Testing

/// What the server answered rides in the events (`responseBody`), up to a cap, on every
/// transport: before, the events carried byte counts only and no tool could show a body.
@Suite("Response bodies in the events, on each transport", .serialized)
struct ResponseBodyEventTests {
    private func bodies(_ recorder: EventRecorder, _ id: String) -> [(RecordedBody, Int, Bool, String?, Int)] {
        recorder.events(of: id).compactMap { event in
            if case .responseBody(let body, let total, let truncated, let type) = event.payload { (body, total, truncated, type, event.attempt) } else { nil }
        }
    }

    @Test(arguments: TransportKind.allCases)
    func eachAnswerCarriesItsBodyUpToTheCap(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        let recorder = EventRecorder(queue.events)

        let whole = try await queue.response(for: URLRequest(url: server.url("/bytes/3000?seed=4")), id: "whole")
        let shown = bodies(recorder, "whole")
        #expect(shown.count == 1)
        #expect(shown.first?.0 == .bytes(whole.data), "byte for byte what the result has")
        #expect(shown.first?.1 == 3000 && shown.first?.2 == false)
        let names = recorder.names(of: "whole")
        #expect(names.firstIndex(of: "responseBody")! < names.firstIndex(of: "taskCompleted")!)

        var capped = RequestOptions()
        capped.responseBodyCap = 100
        _ = try await queue.response(for: URLRequest(url: server.url("/bytes/3000?seed=4")), id: "capped", options: capped)
        let cut = try #require(bodies(recorder, "capped").first)
        #expect(cut.0 == .bytes(Data(FaultServer.expectedBytes(count: 3000, seed: 4).prefix(100))))
        #expect(cut.1 == 3000 && cut.2 == true, "marked as cut, with the whole size")

        var none = RequestOptions()
        none.responseBodyCap = 0
        _ = try await queue.response(for: URLRequest(url: server.url("/echo")), id: "none", options: none)
        #expect(bodies(recorder, "none").isEmpty, "a cap of 0 carries none")

        // Each attempt's answer: a retried 503 shows the failing body, then the good one.
        _ = try? await queue.response(for: URLRequest(url: server.url("/flaky/body-\(kind)?failures=1&status=503")), id: "retried",
                                      options: RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy(maxAttempts: 2, baseDelay: 0.01)))
        let attempts = bodies(recorder, "retried")
        #expect(attempts.map(\.4) == [1, 2])
        #expect(attempts.first?.3?.hasPrefix("text/plain") == true, "with the media type: \(attempts)")
    }

    /// The negotiated HTTP version rides on the `response` event where the transport says
    /// (NIO); FoundationNetworking does not expose it, and the field is left out.
    @Test(arguments: TransportKind.allCases)
    func theResponseSaysItsHTTPVersionWhereTheTransportKnows(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        _ = try await queue.response(for: URLRequest(url: server.url("/echo")), id: "v")
        let versions = recorder.events(of: "v").compactMap { event -> String?? in
            if case .response(_, _, _, let version) = event.payload { version } else { nil }
        }
        switch kind {
        case .nio: #expect(versions == ["HTTP/1.1"])
        case .urlsession: #expect(versions == [nil])
        }
    }
}
