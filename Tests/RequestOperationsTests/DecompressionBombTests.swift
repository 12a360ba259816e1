import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import RequestTransportNIO
import Testing

/// An answer that decodes to far more than came on the wire (#32: "a decompression bomb ends
/// the attempt with a named error"), on each transport: neither the memory nor a download's
/// disk fills. The fault server's `/gzip/{n}?zeros=1` decodes to about 159× its size.
@Suite("Decompression bombs, on each transport", .serialized)
struct DecompressionBombTests {
    private func folder() throws -> String {
        let path = NSTemporaryDirectory() + "reqtop-bomb-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test(arguments: TransportKind.allCases)
    func aHighlyCompressedAnswerUnderTheRatioIsDecodedWhole(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        // 3 MiB of zeros in about 20 KB: 159×, under the default 200×.
        let result = try await queue.response(for: URLRequest(url: server.url("/gzip/3145728?zeros=1")), id: "zeros")
        #expect(result.data.count == 3 << 20)
        #expect(result.data.allSatisfy { $0 == 0 })
    }

    @Test(arguments: TransportKind.allCases)
    func aBombWithALengthEndsTheAttemptBeforeItFillsTheDisk(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let folder = try folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        var options = RequestOptions(retryPolicy: .never)
        options.destination = URL(fileURLWithPath: folder + "/report.bin")
        options.maxDecodedRatio = 50
        do {
            // 64 MiB of zeros in 420 KB on the wire, to a file (which has no size limit).
            _ = try await queue.response(for: URLRequest(url: server.url("/gzip/67108864?zeros=1")), id: "bomb", options: options)
            Issue.record("a body 159× its wire size is over a 50× limit")
        } catch let error as RequestError {
            #expect(error.result.attempts.last?.failure == .transport(.dataLengthExceedsMaximum), "\(error)")
            #expect("\(error)".contains("50× its"), "named: \(error)")
            #expect(error.result.attempts.last.map { $0.bytes < 32 << 20 } == true, "stopped early: \(error.result.attempts.last?.bytes ?? -1) bytes")
        }
        #expect((try FileManager.default.contentsOfDirectory(atPath: folder)).isEmpty, "nothing left on disk")
    }

    @Test func aBombWithoutALengthIsStoppedByTheNIOTransportsDecoder() async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let transport = NIOTransport(proxies: .none, maxDecodedRatio: 50)
        defer { Task { try? await transport.shutdown() } }
        let queue = RequestQueue(transport: transport, earlyRetry: nil)
        var options = RequestOptions(retryPolicy: .never)
        options.maxResponseBytes = nil
        do {
            _ = try await queue.response(for: URLRequest(url: server.url("/gzip/67108864?zeros=1&chunked=1")), id: "chunked", options: options)
            Issue.record("a chunked body 159× its wire size is over the transport's 50×")
        } catch let error as RequestError {
            #expect(error.result.attempts.last?.failure == .transport(.dataLengthExceedsMaximum), "\(error)")
            #expect("\(error)".contains("decompression bomb"), "named: \(error)")
        }
    }

    /// FoundationNetworking does not tell the wire size of a chunked encoded answer: there
    /// the body limit in memory is what holds it (documented on `maxDecodedRatio`).
    @Test func withoutALengthTheURLSessionTransportHoldsABombByTheMemoryLimit() async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: TransportKind.urlsession.make(), earlyRetry: nil)
        var options = RequestOptions(retryPolicy: .never)
        options.maxResponseBytes = 8 << 20
        do {
            _ = try await queue.response(for: URLRequest(url: server.url("/gzip/67108864?zeros=1&chunked=1")), id: "chunked", options: options)
            Issue.record("64 MiB decoded is over an 8 MiB limit")
        } catch let error as RequestError {
            #expect(error.result.attempts.last?.failure == .transport(.dataLengthExceedsMaximum), "\(error)")
            #expect("\(error)".contains("maxResponseBytes"), "\(error)")
        }
    }
}
