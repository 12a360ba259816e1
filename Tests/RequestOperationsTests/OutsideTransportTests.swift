import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations
import Synchronization
import XCTest

/// A transport written outside the engine (the DocC article's, as it is there) carries
/// requests through the seam it is given; the operation's own handlers are not public (#43).
/// Imported without `@testable`: what an outside module can see is all this test sees.
final class OutsideTransportTests: XCTestCase {
    final class NoContentTransport: RequestTransport {
        let name = "no-content"
        private let next = Mutex(0)

        func makeTask(for request: RequestMessage, handler: TransportCallbacks) -> TransportTask {
            let identifier = next.withLock { $0 += 1; return $0 }
            return TransportTask(identifier: identifier, handle: Call(request: request, handler: handler))
        }

        func resume(_ task: TransportTask) {
            guard let call = task.handle as? Call else { return }
            // Never call back from inside resume(): the engine may hold its lock there.
            DispatchQueue.global().async {
                let response = TransportResponse(url: call.request.url, statusCode: 204, httpVersion: "HTTP/1.1", fields: [])
                _ = call.handler.task(task.identifier, didReceive: response)
                call.handler.task(task.identifier, didCompleteWithError: nil)
            }
        }

        func cancel(_ task: TransportTask) {}
        func discard(_ task: TransportTask) {}

        struct Call: Sendable {
            let request: RequestMessage
            let handler: TransportCallbacks
        }
    }

    func testAnOutsideTransportCarriesRequestsThroughTheSeam() async throws {
        let queue = RequestQueue(maxConcurrentRequests: 4, transport: NoContentTransport())
        for index in 0..<20 {
            let response = try await queue.response(for: URLRequest(url: URL(string: "http://example.invalid/\(index)")!), id: "r\(index)")
            XCTAssertEqual(response.status, 204)
        }
        // `RequestOperation` is no `TransportCallbacks` any more: a caller cannot drive them.
        let operation = queue.add(URLRequest(url: URL(string: "http://example.invalid/x")!))
        XCTAssertFalse((operation as Any) is TransportCallbacks)
        _ = await operation.finished
    }
}
