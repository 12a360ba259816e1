import Foundation
import NIOCore
import NIOHTTP1
import RequestOperations

/// What the client receives when the proxy has no upstream answer to pass on: a status, a
/// `Proxy-Status` header (RFC 9209) naming the error type, and a one-line text body that says
/// the same in words. The upstream's own answers (an error page, a 503) are never replaced.
struct ProxyFailureAnswer: Equatable {
    let status: Int
    /// RFC 9209's error type (`connection_refused`, `tls_certificate_error`, ...).
    let errorType: String
    let message: String

    var headers: [(String, String)] {
        [("Content-Type", "text/plain; charset=utf-8"),
         ("Proxy-Status", "reqtop; error=\(errorType); details=\"\(Self.quoted(message))\""),
         ("Content-Length", String(body.utf8.count))]
    }

    var body: String { "reqtop proxy: \(message)\n" }

    /// The answer for an operation that ended without an upstream answer to pass on.
    init(_ reason: RequestError.Reason) {
        let (status, errorType, message) = Self.describe(reason)
        self.init(status: status, errorType: errorType, message: message)
    }

    private static func describe(_ reason: RequestError.Reason) -> (Int, String, String) {
        switch reason {
        case .transport(let error):
            return transport(error)
        case .cancelled(let by):
            return (502, "proxy_internal_response", "the request was cancelled by \(by) before an answer came")
        case .deadlineExceeded:
            return (504, "http_response_timeout", "no answer: \(reason)")
        case .circuitOpen(let host, let why):
            return (503, "destination_unavailable", "the circuit breaker for \(host) is open (\(why))")
        case .retriesExhausted(_, let last), .retryDenied(_, let last):
            return describe(last)
        case .preparation(let why):
            return (502, "proxy_internal_error", "the request could not be sent: \(why)")
        case .interceptor(let name, let why):
            return (502, "proxy_internal_error", "interceptor \(name) failed: \(why)")
        case .reactor(let name, let why):
            return (502, "proxy_internal_error", "reactor \(name) failed: \(why)")
        case .status(let code):
            return (502, "http_protocol_error", "the upstream answered \(code) and the answer was not kept")
        case .validation(let why), .decoding(let why):
            return (502, "http_protocol_error", why)
        }
    }

    /// The same answer for a request sent through the chained proxy `chain`: a failure to
    /// reach the host is said to be through it (the transport's message names the chain's
    /// address, which a person would take for the host's).
    func through(_ chain: ProxyChain) -> ProxyFailureAnswer {
        switch errorType {
        case "connection_refused", "connection_timeout", "dns_error", "connection_terminated":
            return ProxyFailureAnswer(status: status, errorType: errorType, message: "through the chained proxy \(chain.name): \(message)")
        default:
            return self
        }
    }

    init(status: Int, errorType: String, message: String) {
        (self.status, self.errorType, self.message) = (status, errorType, message)
    }

    private static func transport(_ error: TransportError) -> (Int, String, String) {
        if let tls = error.tls {
            let type = tls == .handshakeFailed ? "tls_protocol_error" : "tls_certificate_error"
            return (502, type, "TLS to the upstream failed (\(tls.rawValue)): \(error.message)")
        }
        switch URLError.Code(rawValue: error.code) {
        case .cannotFindHost, .dnsLookupFailed:
            return (502, "dns_error", error.message)
        case .cannotConnectToHost:
            return (502, "connection_refused", error.message)
        case .timedOut:
            return (504, error.timeout == .connect ? "connection_timeout" : "http_response_timeout", error.message)
        case .networkConnectionLost:
            return (502, "connection_terminated", error.message)
        case .dataLengthExceedsMaximum:
            return (502, "http_response_content_length", error.message)
        case .cancelled:
            return (502, "proxy_internal_response", error.message)
        default:
            return (502, "proxy_internal_error", "\(error.message) (\(error.code))")
        }
    }

    /// `text` as an RFC 8941 string's inside: no quote, backslash or control character; past
    /// 300 characters cut at a word's end and marked, never mid-word.
    static func quoted(_ text: String) -> String {
        let plain = String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "\\" }.map(Character.init))
        guard plain.count > 300 else { return plain }
        let head = plain.prefix(297)
        let cut = head.lastIndex(of: " ").map { head[..<$0] } ?? head
        return cut + "..."
    }
}

extension ProxyFailureAnswer {
    /// Writes the answer on `channel` through its HTTP encoder, with `extra` headers; closes the
    /// connection after it when `closing`.
    func send(on channel: Channel, extra: [(String, String)] = [], closing: Bool) {
        var fields = HTTPHeaders(headers + extra)
        if closing { fields.add(name: "Connection", value: "close") }
        channel.write(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: fields)), promise: nil)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: body))), promise: nil)
        let written = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
        if closing { written.whenComplete { _ in channel.close(promise: nil) } }
    }

    /// The whole answer as bytes, for a connection with no HTTP encoder (refused as it opens).
    var bytes: ByteBuffer {
        let status = HTTPResponseStatus(statusCode: status)
        let head = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\n" + headers.map { "\($0.0): \($0.1)\r\n" }.joined() + "Connection: close\r\n\r\n"
        return ByteBuffer(string: head + body)
    }
}
