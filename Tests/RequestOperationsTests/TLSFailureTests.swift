import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import XCTest

/// Before: every TLS failure read "transport error -1 (URL error -1)".
final class TLSFailureTests: XCTestCase {
    func testHTTPSToAPlainHTTPServerIsAFailedHandshakeByName() throws {
        let server = try startServer()
        let queue = RequestQueue()
        let recorder = EventRecorder(queue.events)
        let url = URL(string: "https://127.0.0.1:\(server.port)/echo")!
        let operation = queue.add(URLRequest(url: url), id: "tls", options: RequestOptions(retryPolicy: .never))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.attempts.first?.failure, .transport(.secureConnectionFailed))
        XCTAssertEqual(operation.attempts.first?.decision, "transport error -1200 (TLS handshake failed); retries exhausted after 1 of 1 attempts")
        let completed = recorder.events(of: "tls").compactMap { event -> TransportError? in
            if case .taskCompleted(let error) = event.payload { return error }
            return nil
        }
        XCTAssertEqual(completed.first?.code, -1200)
        XCTAssert(completed.first?.message.contains("SSL") == true, "OpenSSL's own words are kept: \(completed)")
    }

    func testAnUntrustedCertificateIsNamedAndNotRetried() {
        let error = NSError(domain: NSURLErrorDomain, code: -1,
                            userInfo: [NSLocalizedDescriptionKey: "SSL certificate problem: self-signed certificate"])
        let transport = TransportError(error)
        XCTAssertEqual(transport.code, URLError.Code.serverCertificateUntrusted.rawValue)
        XCTAssertEqual(transport.message, "SSL certificate problem: self-signed certificate")
        let decision = ExponentialBackoffRetryPolicy().decide(RetryContext(method: "GET", attempt: 1, failure: .transport(.serverCertificateUntrusted)))
        XCTAssertEqual(decision, .stop(reason: "transport error -1202 (TLS certificate not trusted) is not retryable"))
    }
}
