import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Testing

/// Compressed answers alike on every transport: before, NIO left gzip undecoded while
/// libcurl decoded it, so one request gave two bodies and two sizes.
@Suite("Compressed answers, on each transport", .serialized)
struct CompressionTests {
    @Test(arguments: TransportKind.allCases)
    func aGzipAnswerIsDecodedAndItsLimitCountsDecodedBytes(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        let result = try await queue.response(for: URLRequest(url: server.url("/gzip/200000?seed=3")), id: "gzip")
        #expect(Array(result.data) == FaultServer.expectedBytes(count: 200_000, seed: 3))
        #expect(server.counters.requests("/gzip/200000").last?.headers["accept-encoding"]?.contains("gzip") == true,
                "the transport offered gzip")

        // The limit on memory counts what was decoded, not what came over the wire.
        var options = RequestOptions(retryPolicy: .never)
        options.maxResponseBytes = 100_000
        do {
            _ = try await queue.response(for: URLRequest(url: server.url("/gzip/300000")), id: "over", options: options)
            Issue.record("300,000 decoded bytes are over a 100,000-byte limit")
        } catch let error as RequestError {
            #expect(error.result.attempts.last?.failure == .transport(.dataLengthExceedsMaximum))
        }

        // A caller's own Accept-Encoding stands.
        var identity = URLRequest(url: server.url("/echo"))
        identity.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        _ = try await queue.response(for: identity, id: "identity")
        #expect(server.counters.requests("/echo").last?.headers["accept-encoding"] == "identity")
    }

    @Test(arguments: TransportKind.allCases)
    func anAnswerThatIsNotWhatItsEncodingSaysFailsByName(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        do {
            _ = try await queue.response(for: URLRequest(url: server.url("/gzip/5000?broken=1")), id: "broken",
                                         options: RequestOptions(retryPolicy: .never))
            Issue.record("bytes that are not gzip under Content-Encoding: gzip must fail")
        } catch let error as RequestError {
            #expect(error.result.attempts.last?.failure == .transport(.cannotDecodeContentData), "\(error)")
        }
    }
}

/// A server that sends more than its `Content-Length` (#32's bad input): the answer is what
/// the length said, on both transports, and the bytes after it never become the next answer.
@Suite("A body longer than its Content-Length, on each transport", .serialized)
struct OverlongBodyTests {
    @Test(arguments: TransportKind.allCases)
    func theAnswerIsWhatItsLengthSaidAndTheRestIsDropped(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 1, transport: kind.make(), earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let answer = try await queue.response(for: URLRequest(url: server.url("/overlong?bytes=1000&extra=500")), id: "overlong",
                                              options: RequestOptions(retryPolicy: .never))
        #expect(answer.status == 200)
        #expect(answer.data == Data(repeating: UInt8(ascii: "x"), count: 1000), "\(answer.data.count) bytes")
        // The extra bytes are not taken for the next answer on that connection.
        let next = try await queue.response(for: URLRequest(url: server.url("/echo")), id: "next")
        #expect(next.status == 200 && String(decoding: next.data, as: UTF8.self).contains(#""path""#))
        #expect(recorder.events(of: "overlong").contains { if case .finished(.success, 200, _, _, _) = $0.payload { true } else { false } },
                "the event stream says how it ended")
    }
}
