import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import RequestTransportNIO
import Testing

/// HTTP/2 against a real HTTP/2 server (the fault server with ALPN h2 on TLS): the version
/// AsyncHTTPClient negotiated is on every `response` event, the routes behave as on HTTP/1.1,
/// and a body, a retry and a redirect work over streams.
@Suite("HTTP/2 against the fault server", .serialized)
struct HTTP2VersionTests {
    @Test func theNegotiatedVersionIsReportedAndTheRoutesWorkOverStreams() async throws {
        let pki = try TestCertificates.make()
        defer { pki.remove() }
        let server = try FaultServer.start(tls: pki, http2: true)
        defer { server.stop() }
        let transport = try NIOTransport(tls: TLSOptions(caFile: pki.caFile), proxies: .none)
        defer { Task { try? await transport.shutdown() } }
        let queue = RequestQueue(maxConcurrentRequests: 4, transport: transport, earlyRetry: nil)
        let recorder = EventRecorder(queue.events)

        var post = URLRequest(url: server.url("/echo"))
        (post.httpMethod, post.httpBody) = ("POST", Data(#"{"over":"h2"}"#.utf8))
        let echoed = try await queue.response(for: post, id: "echo")
        #expect(echoed.status == 200)
        #expect(String(decoding: echoed.data, as: UTF8.self).contains(#"over"#), "the body crossed a stream")

        let options = RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy(maxAttempts: 3, baseDelay: 0.01))
        let flaky = try await queue.response(for: URLRequest(url: server.url("/flaky/h2-\(UUID().uuidString.prefix(6))?failures=1&status=503")),
                                             id: "flaky", options: options)
        #expect(flaky.status == 200 && flaky.attempts.count == 2)
        let moved = try await queue.response(for: URLRequest(url: server.url("/redirect/2")), id: "moved")
        #expect(moved.status == 200)

        let versions = ["echo", "flaky", "moved"].flatMap(recorder.events(of:)).compactMap { event -> String? in
            if case .response(_, _, _, let version) = event.payload { version } else { nil }
        }
        #expect(!versions.isEmpty && versions.allSatisfy { $0 == "HTTP/2.0" }, "\(versions)")

        // The documented refusal: AsyncHTTPClient does not say which connection an HTTP/2
        // stream runs on (its HTTP/1.1 handler puts `ahc-connection-id` on the request's
        // logger; its HTTP/2 handler does not), so no `connection` event is made up. Should
        // a release start saying it, this fails and the event format's row can change.
        let connections = ["echo", "flaky", "moved"].flatMap(recorder.events(of:)).filter { event in
            if case .connection = event.payload { true } else { false }
        }
        #expect(connections.isEmpty, "\(connections)")
    }
}
