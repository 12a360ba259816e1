import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Testing

/// Answers saved to a file as they arrive, and a limit on what memory may hold, on every
/// transport. Before, every body was held whole in memory, without a limit.
@Suite("Downloads to a file and the body limit, on each transport", .serialized)
struct ResponseFileTests {
    private func folder() throws -> String {
        let path = NSTemporaryDirectory() + "reqtop-download-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func leftovers(_ folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.contains("reqtop-partial") }
    }

    @Test(arguments: TransportKind.allCases)
    func aDownloadGoesToItsFileOnlyWhenItSucceeds(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let folder = try folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        let recorder = EventRecorder(queue.events)

        var options = RequestOptions()
        options.destination = URL(fileURLWithPath: folder + "/report.bin")
        let result = try await queue.response(for: URLRequest(url: server.url("/bytes/300000?seed=5")), id: "report", options: options)
        #expect(result.file?.path == folder + "/report.bin")
        #expect(result.data.isEmpty, "the body went to the file, not memory")
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/report.bin"))) == FaultServer.expectedBytes(count: 300_000, seed: 5))
        #expect(leftovers(folder).isEmpty)
        let saved = recorder.events(of: "report").compactMap { event -> String? in
            if case .responseBody(.omitted(_, let reason), 300_000, _, _) = event.payload { reason } else { nil }
        }
        #expect(saved == ["saved to \(folder)/report.bin"])

        // A 503 first (its page stays in memory), then the body: only the good one is saved.
        options.destination = URL(fileURLWithPath: folder + "/flaky.txt")
        options.retryPolicy = ExponentialBackoffRetryPolicy(maxAttempts: 2, baseDelay: 0.01)
        _ = try await queue.response(for: URLRequest(url: server.url("/flaky/download-\(kind)?failures=1&status=503")), id: "flaky", options: options)
        #expect(try String(contentsOfFile: folder + "/flaky.txt", encoding: .utf8).hasPrefix("ok after 1 failure"))

        // Cut off half way: nothing under the final name, no partial file left.
        options.destination = URL(fileURLWithPath: folder + "/cut.bin")
        options.retryPolicy = .never
        let cut = try? await queue.response(for: URLRequest(url: server.url("/close-mid-body?bytes=200000")), id: "cut", options: options)
        #expect(cut == nil)
        #expect(!FileManager.default.fileExists(atPath: folder + "/cut.bin"))
        #expect(leftovers(folder).isEmpty, "\(leftovers(folder))")
    }

    @Test(arguments: TransportKind.allCases)
    func anAnswerOverTheLimitEndsTheAttemptByName(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        var options = RequestOptions(retryPolicy: .never)
        options.maxResponseBytes = 10_000
        do {
            _ = try await queue.response(for: URLRequest(url: server.url("/bytes/500000")), id: "big", options: options)
            Issue.record("an answer over the limit must fail")
        } catch let error as RequestError {
            let last = try #require(error.result.attempts.last)
            #expect(last.failure == .transport(.dataLengthExceedsMaximum), "\(String(describing: last.failure))")
            #expect(error.result.data.count <= 10_000)
        }
        // Within the limit, as before.
        _ = try await queue.response(for: URLRequest(url: server.url("/bytes/9000")), id: "small", options: options)
        // The default is 64 MiB.
        #expect(RequestOptions().maxResponseBytes == 64 << 20)
    }

    @Test(arguments: TransportKind.allCases)
    func aFileOverItsLimitEndsByNameAndLeavesNothing(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let folder = try folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        var options = RequestOptions(retryPolicy: .never)
        options.destination = URL(fileURLWithPath: folder + "/big.bin")
        options.maxFileBytes = 100_000
        #expect(RequestOptions().maxFileBytes == nil, "a file has no limit unless one is set")

        // With a length: refused at the answer's head. Without one (chunked): when the bytes
        // pass the limit.
        for (id, path) in [("length", "/bytes/500000"), ("chunked", "/gzip/300000?chunked=1")] {
            do {
                _ = try await queue.response(for: URLRequest(url: server.url(path)), id: id, options: options)
                Issue.record("\(id): an answer over the file's limit must fail")
            } catch let error as RequestError {
                let last = try #require(error.result.attempts.last)
                #expect(last.failure == .transport(.dataLengthExceedsMaximum), "\(id): \(String(describing: last.failure))")
                #expect("\(error)".contains("maxFileBytes"), "\(id): \(error)")
                #expect(last.bytes <= 100_000 + 65_536, "\(id): stopped near the limit, not at the end (\(last.bytes))")
            }
            #expect(!FileManager.default.fileExists(atPath: folder + "/big.bin"))
            #expect(leftovers(folder).isEmpty, "\(leftovers(folder))")
        }
        // Within the limit, as before.
        _ = try await queue.response(for: URLRequest(url: server.url("/bytes/90000")), id: "small", options: options)
        #expect((try? Data(contentsOf: URL(fileURLWithPath: folder + "/big.bin")))?.count == 90_000)
    }

    /// Before: the move into place was a `rename()` over whatever was there, so
    /// `"saveTo": "/dev/null"` (as root) replaced the system's /dev/null with a regular file,
    /// and a link was replaced, not written through. Now anything but a regular file (or
    /// nothing) is refused by name, and left as it was.
    @Test(arguments: TransportKind.allCases)
    func aDestinationThatIsNotARegularFileIsRefusedByNameAndLeftAlone(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let folder = try folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        #expect(mkfifo(folder + "/pipe", 0o600) == 0)
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: folder + "/target"))
        #expect(symlink(folder + "/target", folder + "/link") == 0)
        #expect(mkdir(folder + "/dir", 0o700) == 0)
        for (name, kindWord, type) in [("pipe", "a pipe", S_IFIFO), ("link", "a symbolic link", S_IFLNK), ("dir", "a folder", S_IFDIR)] {
            var options = RequestOptions(retryPolicy: .never)
            options.destination = URL(fileURLWithPath: folder + "/" + name)
            do {
                _ = try await queue.response(for: URLRequest(url: server.url("/bytes/1000")), id: name, options: options)
                Issue.record("\(name): saving over \(kindWord) must fail")
            } catch let error as RequestError {
                #expect(error.result.attempts.last?.failure == .transport(.cannotCreateFile), "\(name): \(error)")
                #expect("\(error)".contains("it is \(kindWord), and saving replaces what is there"), "\(name): \(error)")
            }
            var info = stat()
            lstat(folder + "/" + name, &info)
            #expect(info.st_mode & S_IFMT == type, "\(name) is still \(kindWord)")
        }
        #expect(try String(contentsOfFile: folder + "/target", encoding: .utf8) == "keep me")
        #expect(leftovers(folder).isEmpty, "\(leftovers(folder))")
        #expect(throws: ResponseFileError.self) { try RequestOptions.checkDestination("/dev/null") }
        #expect(throws: Never.self) { try RequestOptions.checkDestination(folder + "/target") }
        #expect(throws: Never.self) { try RequestOptions.checkDestination(folder + "/not-yet") }
    }
}
