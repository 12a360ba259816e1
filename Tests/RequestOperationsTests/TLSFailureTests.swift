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
        // In the words the attempt ended with (OpenSSL's), not the code's general ones.
        let decision = operation.attempts.first?.decision ?? ""
        XCTAssert(decision.hasPrefix("transport error -1200 (") && decision.contains("SSL") && decision.hasSuffix("); retries exhausted after 1 of 1 attempts"), decision)
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

    /// Before: URLSession named a server that requires a client certificate -1005: a TLS 1.3
    /// server's alert comes after the handshake, while libcurl reads, and only libcurl's
    /// words say what it was. Read for it as NIO names it (-1206). (A live test needs a server
    /// URLSession trusts, and FoundationNetworking on Linux takes no authority of ours.)
    func testACertificateRequiredAlertWhileReadingIsNamedAsTheRefusal() {
        let alert = URLError(.networkConnectionLost, userInfo: [
            NSLocalizedDescriptionKey: "OpenSSL SSL_read: OpenSSL/3.0.17: error:0A00045C:SSL routines::tlsv13 alert certificate required, errno 0",
        ])
        let required = TransportError(alert)
        XCTAssertEqual(required.code, -1206)
        XCTAssertEqual(required.tls, .clientCertificateRequired)
        let lost = TransportError(URLError(.networkConnectionLost, userInfo: [NSLocalizedDescriptionKey: "Recv failure: Connection reset by peer"]))
        XCTAssertEqual(lost.code, -1005, "a lost connection stays one")
        XCTAssertNil(lost.tls)
        let ssl = TransportError(URLError(.networkConnectionLost, userInfo: [NSLocalizedDescriptionKey: "OpenSSL SSL_read: unexpected eof while reading"]))
        XCTAssertEqual(ssl.code, -1005, "only a certificate alert is read as TLS")
    }
}
