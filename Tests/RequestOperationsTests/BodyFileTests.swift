import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Testing

/// Uploads from a file on every transport: sent byte for byte without holding the file,
/// read again from its start by each retry and (where the transport re-sends bodies) by a
/// 307; a file that cannot be a body fails by name, not retried.
@Suite("Uploads from a file, on each transport", .serialized)
struct BodyFileTests {
    /// A file of `count` bytes from the fault server's byte stream, and its digest.
    private func file(_ count: Int) throws -> (URL, BodyDigest) {
        let url = URL(fileURLWithPath: NSTemporaryDirectory() + "reqtop-upload-\(UUID().uuidString.prefix(8)).bin")
        let bytes = FaultServer.expectedBytes(count: count, seed: 9)
        try Data(bytes).write(to: url)
        var digest = BodyDigest()
        digest.add(bytes)
        return (url, digest)
    }

    private func sink(_ data: Data) throws -> (bytes: Int, hash: String) {
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return (object["bodyBytes"] as? Int ?? -1, object["fnv1a"] as? String ?? "")
    }

    @Test(arguments: TransportKind.allCases)
    func aFileIsSentByteForByteAndAgainOnARetry(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let (file, digest) = try file(3 << 20)
        defer { try? FileManager.default.removeItem(at: file) }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        var options = RequestOptions()
        options.bodyFile = file
        var request = URLRequest(url: server.url("/sink"))
        request.httpMethod = "PUT"
        request.httpBody = Data("replaced by the file".utf8)
        let result = try await queue.response(for: request, id: "upload", options: options)
        let sent = try sink(result.data)
        #expect(sent.bytes == digest.count)
        #expect(sent.hash == digest.hex)
        // The benchmarks' count-only sink: the same length, no hash.
        request.url = server.url("/sink?hash=0")
        let counted = try sink(try await queue.response(for: request, id: "counted", options: options).data)
        #expect(counted.bytes == digest.count)
        #expect(counted.hash == "")

        // A retry sends the whole file again, from its first byte.
        options.retryPolicy = ExponentialBackoffRetryPolicy(maxAttempts: 2, baseDelay: 0.01)
        var flaky = URLRequest(url: server.url("/flaky/upload-\(kind)?failures=1&status=503"))
        flaky.httpMethod = "PUT"
        let retried = try await queue.response(for: flaky, id: "retried", options: options)
        #expect(retried.attempts.count == 2)
        let arrived = server.counters.requests("/flaky/upload-\(kind)").map(\.body.count)
        #expect(arrived == [digest.count, digest.count], "both attempts carried the whole file")
    }

    @Test(arguments: TransportKind.allCases)
    func aRedirectThatKeepsTheBodyReadsTheFileAgainOrEndsByName(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let (file, digest) = try file(200_000)
        defer { try? FileManager.default.removeItem(at: file) }
        let transport = kind.make()
        let queue = RequestQueue(transport: transport, earlyRetry: nil)
        var options = RequestOptions(retryPolicy: .never)
        options.bodyFile = file
        var request = URLRequest(url: server.url("/redirect-to?url=/sink&status=307"))
        request.httpMethod = "POST"
        if transport.resendsBodyOnRedirect {
            let result = try await queue.response(for: request, id: "moved", options: options)
            let sent = try sink(result.data)
            #expect(sent.bytes == digest.count && sent.hash == digest.hex, "the 307 carried the file again, from its start")
        } else {
            // FoundationNetworking sends a 307 on without its body: refused, by name.
            await #expect(throws: RequestError.self) { try await queue.response(for: request, id: "moved", options: options) }
            #expect(server.counters.hits("/sink") == 0)
        }
    }

    @Test(arguments: TransportKind.allCases)
    func aFileThatCannotBeABodyFailsByNameAndIsNotRetried(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        let cases: [(String, String)] = [
            ("/nonexistent/reqtop-missing.bin", "does not exist"),
            (NSTemporaryDirectory(), "is a folder"),
            ("/dev/zero", "is not a regular file"),
        ]
        for (path, problem) in cases {
            var options = RequestOptions()
            options.bodyFile = URL(fileURLWithPath: path)
            var request = URLRequest(url: server.url("/sink"))
            request.httpMethod = "PUT"
            do {
                _ = try await queue.response(for: request, id: "bad", options: options)
                Issue.record("\(path) must not be sent")
            } catch let error as RequestError {
                #expect(error.result.attempts.count == 1, "not retried")
                #expect("\(error)".contains("the body file \(URL(fileURLWithPath: path).path) \(problem)"), "\(error)")
            }
        }
        #expect(server.counters.hits("/sink") == 0)
    }

    /// Before: NIO sent `bodyFile: /proc/self/status` as an empty body (the file stats as 0
    /// bytes), where URLSession sent what it reads. Now neither says a length it does not know.
    @Test(arguments: TransportKind.allCases)
    func aFileThatStatsAsEmptyButReadsAsMoreIsSentWhole(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        var options = RequestOptions()
        options.bodyFile = URL(fileURLWithPath: "/proc/self/status")
        var request = URLRequest(url: server.url("/sink"))
        request.httpMethod = "PUT"
        let sent = try sink(try await queue.response(for: request, id: "proc", options: options).data)
        #expect(sent.bytes > 100, "\(kind): the file's lines, not an empty body (\(sent.bytes) bytes)")
    }
}
