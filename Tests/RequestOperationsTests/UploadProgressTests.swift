import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Testing

/// A request body on its way, on each transport (#32: a 50 MB upload showed only `running`):
/// `uploaded` events that grow to the whole body, about a hundred of them whatever its size.
@Suite("Upload progress, on each transport", .serialized)
struct UploadProgressTests {
    private func uploads(_ recorder: EventRecorder, _ id: String) -> [(bytes: Int, total: Int?)] {
        recorder.events(of: id).compactMap { if case .uploaded(let bytes, let total) = $0.payload { (bytes, total) } else { nil } }
    }

    @Test(arguments: TransportKind.allCases)
    func aFileGoingUpIsToldInStepsToItsLength(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let size = 8 << 20
        let file = URL(fileURLWithPath: NSTemporaryDirectory() + "reqtop-progress-\(UUID().uuidString.prefix(8)).bin")
        try Data(FaultServer.expectedBytes(count: size, seed: 4)).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        var options = RequestOptions()
        options.bodyFile = file
        var request = URLRequest(url: server.url("/sink"))
        request.httpMethod = "PUT"
        _ = try await queue.response(for: request, id: "up", options: options)

        let steps = uploads(recorder, "up")
        #expect(steps.count >= 10 && steps.count <= 101, "\(steps.count) events")
        #expect(steps.allSatisfy { $0.total == size }, "the file's length is known")
        #expect(zip(steps, steps.dropFirst()).allSatisfy { $0.bytes < $1.bytes }, "growing")
        #expect(steps.last?.bytes == size, "ends at the whole body: \(String(describing: steps.last))")
        let names = recorder.names(of: "up")
        let lastUpload = try #require(names.lastIndex(of: "uploaded"))
        #expect(names.firstIndex(of: "response").map { lastUpload < $0 } == true, "before the answer: \(names)")
    }

    @Test(arguments: TransportKind.allCases)
    func aSmallBodyInMemoryIsToldOnceWhole(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        var request = URLRequest(url: server.url("/sink"))
        request.httpMethod = "POST"
        request.httpBody = Data(repeating: 7, count: 1000)
        _ = try await queue.response(for: request, id: "small")
        let steps = uploads(recorder, "small")
        #expect(steps.count == 1 && steps.first?.bytes == 1000 && steps.first?.total == 1000, "\(steps)")
        _ = try await queue.response(for: URLRequest(url: server.url("/echo")), id: "get")
        #expect(uploads(recorder, "get").isEmpty, "no body, no upload events")
    }
}
